package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// errClosed is returned to pages that open a live stream after Close.
var errClosed = errors.New("the dashboard is closed")

// hub is the one poller of a Dashboard: it renders the live part of every
// page some browser has open, once per interval, and sends it to every
// browser showing that page when it changed. Browsers showing the same
// page share one topic, so the database is read per page shown, not per
// browser. It runs only while some page is open.
type hub struct {
	interval time.Duration
	log      *slog.Logger
	// counts reads the event counts of runs (ops.Admin.EventCounts).
	counts func(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]int, error)
	ctx    context.Context // ends on close
	cancel context.CancelFunc

	mu      sync.Mutex
	topics  map[string]*topic
	running bool          // the poller goroutine runs
	done    chan struct{} // closed when it has returned
	closed  bool
}

// topic is one live page, shared by the browsers showing it.
type topic struct {
	key string
	// run is the run the page shows, or uuid.Nil: a run's page is
	// rendered again only when its event count moves.
	run    uuid.UUID
	render func(ctx context.Context) ([]byte, error)
	subs   map[*subscriber]bool
	// fresh subscribers have been sent nothing yet: the next poll renders
	// the page for them whatever changed.
	fresh []*subscriber
	count int    // the run's event count when last rendered
	last  []byte // the last render
}

// subscriber is one browser's stream. ch holds the newest render not yet
// sent; an older one is dropped, never waited for.
type subscriber struct {
	topic *topic
	ch    chan []byte
	done  bool
}

func newHub(interval time.Duration, log *slog.Logger, counts func(context.Context, []uuid.UUID) (map[uuid.UUID]int, error)) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{interval: interval, log: log, counts: counts, ctx: ctx, cancel: cancel, topics: map[string]*topic{}}
}

// subscribe adds a browser to the topic key, creating it with run and
// render, and starts the poller if it is not running.
func (h *hub) subscribe(key string, run uuid.UUID, render func(context.Context) ([]byte, error)) (*subscriber, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	t := h.topics[key]
	if t == nil {
		t = &topic{key: key, run: run, render: render, subs: map[*subscriber]bool{}, count: -1}
		h.topics[key] = t
	}
	s := &subscriber{topic: t, ch: make(chan []byte, 1)}
	t.subs[s] = true
	t.fresh = append(t.fresh, s)
	if !h.running {
		h.running, h.done = true, make(chan struct{})
		go h.loop(h.done)
	}
	return s, nil
}

// unsubscribe removes a browser; a topic nobody watches goes.
func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := s.topic
	delete(t.subs, s)
	t.fresh = slices.DeleteFunc(t.fresh, func(f *subscriber) bool { return f == s })
	if len(t.subs) == 0 && h.topics[t.key] == t {
		delete(h.topics, t.key)
	}
	s.finish()
}

// finish closes the subscriber's channel once; the caller holds h.mu.
func (s *subscriber) finish() {
	if !s.done {
		s.done = true
		close(s.ch)
	}
}

// send hands s the newest render, replacing one it has not taken yet; the
// caller holds h.mu.
func (s *subscriber) send(b []byte) {
	if s.done {
		return
	}
	select {
	case <-s.ch:
	default:
	}
	s.ch <- b
}

// close ends every stream and stops the poller, waiting for it.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	h.cancel()
	for _, t := range h.topics {
		for s := range t.subs {
			s.finish()
		}
	}
	h.topics = map[string]*topic{}
	running, done := h.running, h.done
	h.mu.Unlock()
	if running {
		<-done
	}
}

// loop polls at once, then every interval, until nobody watches or the
// hub closes.
func (h *hub) loop(done chan struct{}) {
	defer close(done)
	ticker := time.NewTicker(h.interval)
	defer ticker.Stop()
	for {
		h.mu.Lock()
		if len(h.topics) == 0 || h.closed {
			h.running = false
			h.mu.Unlock()
			return
		}
		topics := make([]*topic, 0, len(h.topics))
		for _, t := range h.topics {
			topics = append(topics, t)
		}
		h.mu.Unlock()
		h.poll(topics)
		select {
		case <-h.ctx.Done():
		case <-ticker.C:
		}
	}
}

// poll renders the topics that may have changed and sends what did: one
// event-count read for every watched run, then one render per topic
// whose page may show something new.
func (h *hub) poll(topics []*topic) {
	defer func() {
		if v := recover(); v != nil {
			h.log.Error("dashboard: live updates panicked", "panic", fmt.Sprint(v))
		}
	}()
	ctx, cancel := context.WithTimeout(h.ctx, max(h.interval, 10*time.Second))
	defer cancel()
	var runs []uuid.UUID
	for _, t := range topics {
		if t.run != uuid.Nil {
			runs = append(runs, t.run)
		}
	}
	var counts map[uuid.UUID]int
	if len(runs) > 0 {
		var err error
		if counts, err = h.counts(ctx, runs); err != nil {
			if ctx.Err() == nil {
				h.log.Warn("dashboard: reading what changed for live updates", "err", err)
			}
			return
		}
	}
	for _, t := range topics {
		h.mu.Lock()
		fresh := slices.Clone(t.fresh)
		h.mu.Unlock()
		if t.run != uuid.Nil && len(fresh) == 0 && counts[t.run] == t.count {
			continue
		}
		b, err := t.render(ctx)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("dashboard: rendering a live update", "page", t.key, "err", err)
			}
			continue
		}
		t.count = counts[t.run]
		h.mu.Lock()
		to := fresh
		if !bytes.Equal(b, t.last) {
			t.last = b
			to = nil
			for s := range t.subs {
				to = append(to, s)
			}
		}
		for _, s := range to {
			s.send(b)
		}
		t.fresh = slices.DeleteFunc(t.fresh, func(s *subscriber) bool { return slices.Contains(fresh, s) })
		h.mu.Unlock()
	}
}
