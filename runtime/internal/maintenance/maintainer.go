// Package maintenance owns the work one engine does for all the engines
// sharing a store while it leads: firing durable timers (timers.go),
// recovering the tasks of dead workers (recovery.go), the store's
// housekeeping (housekeeping.go), logging stuck runs (stuck.go) and
// deleting finished runs past their retention (retention.go). Each duty
// is a Service with a config and its defaults, Start and Stop, and test
// signals; the Maintainer starts them all when the engine gains
// leadership and stops them when it loses it.
//
// The services reach the engine only through the funcs in their
// configs, never the engine itself.
package maintenance

import (
	"context"
	"sync"
	"time"
)

// Service is one duty of the leader.
type Service interface {
	// Start starts the service; it runs until ctx ends or Stop.
	Start(ctx context.Context) error
	// Stop stops the service and returns once it stopped.
	Stop()
}

// Maintainer runs the services while the engine leads.
type Maintainer struct {
	services []Service
	cancel   context.CancelFunc
	done     chan struct{}
}

// NewMaintainer returns a maintainer of services.
func NewMaintainer(services ...Service) *Maintainer {
	return &Maintainer{services: services}
}

// Start follows leading (each value says whether the engine now leads;
// see leadership.Elector.Subscribe): it starts the services when the
// engine gains leadership and stops them when it loses it, until ctx
// ends or Stop.
func (m *Maintainer) Start(ctx context.Context, leading <-chan bool) error {
	ctx, cancel := context.WithCancel(ctx)
	m.cancel, m.done = cancel, make(chan struct{})
	go func() {
		defer close(m.done)
		running := false
		defer func() {
			if running {
				m.stopAll()
			}
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case lead := <-leading:
				switch {
				case lead && !running:
					m.startAll(ctx)
				case !lead && running:
					m.stopAll()
				}
				running = lead
			}
		}
	}()
	return nil
}

// Stop stops the services and returns once they stopped.
func (m *Maintainer) Stop() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	<-m.done
}

func (m *Maintainer) startAll(ctx context.Context) {
	for _, s := range m.services {
		_ = s.Start(ctx) // the services' Start does not fail
	}
}

func (m *Maintainer) stopAll() {
	var wg sync.WaitGroup
	for _, s := range m.services {
		wg.Add(1)
		go func() { defer wg.Done(); s.Stop() }()
	}
	wg.Wait()
}

// loop is the goroutine of a started service.
type loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs body on a goroutine of its own until ctx ends or stop.
func (l *loop) start(ctx context.Context, body func(context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	done := l.done
	go func() {
		defer close(done)
		body(ctx)
	}()
}

// stop stops the goroutine and waits for it.
func (l *loop) stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// StoreHealth is how long the store has answered the leader without a
// failure: a worker is presumed dead only once it has gone StaleAfter
// without a heartbeat while the store was up (see Recoverer).
type StoreHealth struct {
	mu    sync.Mutex
	since time.Time
}

// Failed records a failed store operation at now.
func (h *StoreHealth) Failed(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since = now
}

// Since is when the store last failed the leader, or this engine began
// to lead.
func (h *StoreHealth) Since() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since
}
