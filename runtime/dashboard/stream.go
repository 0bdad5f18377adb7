package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
)

// keepAlive is how often a quiet stream sends a comment, so that proxies
// do not close it as idle.
const keepAlive = 25 * time.Second

// stream serves a page's live updates as server-sent events: an "update"
// event carrying the new HTML of the page's live part whenever it
// changes, until the browser leaves or the dashboard closes.
func (d *Dashboard) stream(w http.ResponseWriter, r *http.Request, key string, run uuid.UUID, render func(context.Context) ([]byte, error)) {
	user := userOf(r).Name
	if !d.streams.acquire(user) {
		d.log.Warn("dashboard: refused a live stream: too many open", "user", user, "path", r.URL.Path)
		w.Header().Set("Retry-After", "60")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintln(w, "503 Service Unavailable: too many live pages are open; this page does not update live (reload it later).")
		return
	}
	defer d.streams.release(user)
	s, err := d.live.subscribe(viewKey(r)+key, run, render)
	if errors.Is(err, errClosed) {
		d.errorPage(w, r, http.StatusServiceUnavailable, "Live updates have stopped: the dashboard is shutting down.")
		return
	}
	defer d.live.unsubscribe(s)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives a server's WriteTimeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass events on at once
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 3000\n\n"); err != nil {
		return
	}
	if rc.Flush() != nil {
		return
	}
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			_, err = fmt.Fprint(w, ": ping\n\n")
		case b, ok := <-s.ch:
			if !ok {
				return
			}
			err = writeEvent(w, "update", b)
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// writeEvent writes one server-sent event; each line of data becomes a
// data field (the browser joins them with line feeds). A carriage return,
// which would end a field, becomes a line feed.
func writeEvent(w http.ResponseWriter, event string, data []byte) error {
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	text := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
	for _, line := range strings.Split(text, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	_, err := fmt.Fprint(w, b.String())
	return err
}
