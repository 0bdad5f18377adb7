package bench

import (
	"context"
	"log/slog"
	"sync"
)

// schemaLogger returns a logger that records the schemas scenarios
// report creating.
func schemaLogger(seen *[]string) *slog.Logger {
	return slog.New(&schemaHandler{mu: &sync.Mutex{}, seen: seen})
}

// schemaLoggerCalling is schemaLogger that also calls on with each
// message logged.
func schemaLoggerCalling(seen *[]string, on func(msg string)) *slog.Logger {
	return slog.New(&schemaHandler{mu: &sync.Mutex{}, seen: seen, on: on})
}

type schemaHandler struct {
	mu    *sync.Mutex
	seen  *[]string
	on    func(msg string)
	attrs []slog.Attr
}

func (h *schemaHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *schemaHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.on != nil {
		h.on(r.Message)
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "schema" && r.Message == "schema ready" {
			*h.seen = append(*h.seen, a.Value.String())
		}
		return true
	})
	return nil
}

func (h *schemaHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &schemaHandler{mu: h.mu, seen: h.seen, on: h.on, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *schemaHandler) WithGroup(string) slog.Handler { return h }
