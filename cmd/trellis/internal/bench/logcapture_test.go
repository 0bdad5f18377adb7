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

type schemaHandler struct {
	mu    *sync.Mutex
	seen  *[]string
	attrs []slog.Attr
}

func (h *schemaHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *schemaHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "schema" && r.Message == "schema ready" {
			*h.seen = append(*h.seen, a.Value.String())
		}
		return true
	})
	return nil
}

func (h *schemaHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &schemaHandler{mu: h.mu, seen: h.seen, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *schemaHandler) WithGroup(string) slog.Handler { return h }
