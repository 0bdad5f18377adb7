// Package leadership owns the election of the engine that leads among
// those sharing a store: it seeks leadership every Config.Interval
// through the store's Elector, says who leads (Leading) and tells its
// subscribers when that changes (Subscribe), and resigns on Stop. What a
// leader does is the maintenance package's.
package leadership

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/internal/testsignal"
	"github.com/effectivelabs/trellis/runtime/store"
)

// Config configures an Elector.
type Config struct {
	// Elector is the store's election for this worker.
	Elector store.Elector
	// Interval is how often leadership is sought, or kept (default 1s).
	Interval time.Duration
	Clock    clock.Clock
	Log      *slog.Logger
	// Faults logs failures to seek leadership, once per outage.
	Faults *telemetry.Faults
}

func (c *Config) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
}

// resignTimeout bounds how long Stop tries to resign.
const resignTimeout = 5 * time.Second

// Elector seeks leadership for one engine while started.
type Elector struct {
	cfg     Config
	leading atomic.Bool

	mu     sync.Mutex
	subs   []chan bool
	cancel context.CancelFunc
	done   chan struct{}

	// TestSignals report each change of leadership, once initialised.
	TestSignals struct {
		Changed testsignal.Signal[bool]
	}
}

// New returns an elector; it does nothing until Start.
func New(cfg Config) *Elector {
	cfg.setDefaults()
	return &Elector{cfg: cfg}
}

// Leading reports whether this engine holds leadership now.
func (e *Elector) Leading() bool { return e.leading.Load() }

// Subscribe returns a channel that receives whether this engine leads
// each time that changes. It holds the latest change only: a slow reader
// sees the current state, not every flip.
func (e *Elector) Subscribe() <-chan bool {
	ch := make(chan bool, 1)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.subs = append(e.subs, ch)
	return ch
}

// Start seeks leadership until ctx ends or Stop.
func (e *Elector) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	e.mu.Lock()
	e.cancel, e.done = cancel, make(chan struct{})
	done := e.done
	e.mu.Unlock()
	go func() {
		defer close(done)
		e.run(ctx)
	}()
	return nil
}

// Stop stops seeking leadership and resigns it, and returns once done.
func (e *Elector) Stop() {
	e.mu.Lock()
	cancel, done := e.cancel, e.done
	e.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

func (e *Elector) run(ctx context.Context) {
	c := e.cfg.Clock
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
		defer cancel()
		e.set(false)
		if err := e.cfg.Elector.Resign(rctx); err != nil {
			e.cfg.Log.Error("resigning leadership", "error", err)
		}
	}()
	for {
		lead, err := e.cfg.Elector.TryLead(ctx)
		e.cfg.Faults.Track("seeking leadership", err, ctx.Err() != nil, c.Now())
		if lead != e.leading.Load() {
			e.cfg.Log.Info("leadership changed", "leader", lead)
			e.set(lead)
		}
		if clock.Sleep(ctx, c, e.cfg.Interval) != nil {
			return
		}
	}
}

// set records whether this engine leads and tells the subscribers when
// that changed.
func (e *Elector) set(lead bool) {
	if e.leading.Swap(lead) == lead {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ch := range e.subs {
		select { // replace an unread change by this one
		case <-ch:
		default:
		}
		ch <- lead
	}
	e.TestSignals.Changed.Signal(lead)
}
