// Package clock is the engine's only source of time. Production code uses
// Real; tests use a Virtual clock that moves only when told to, so that a
// 24-hour sleep or a one-minute retry backoff passes in microseconds and
// in a deterministic order.
package clock

import (
	"context"
	"errors"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// NewTimer returns a timer that delivers on its channel once d has
	// passed.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f once d has passed. The returned timer's channel is
	// nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending timer.
type Timer interface {
	// C delivers the time the timer fired (nil for AfterFunc timers).
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// Real is the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// WithTimeout is context.WithTimeout on clock c: once d has passed on c,
// the context ends with context.DeadlineExceeded, and its Deadline is
// reported in c's time.
func WithTimeout(ctx context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := c.(realClock); ok {
		return context.WithTimeout(ctx, d)
	}
	inner, cancel := context.WithCancelCause(ctx)
	dctx := &deadlineCtx{Context: inner, deadline: c.Now().Add(d)}
	t := c.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return dctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// deadlineCtx is a context ended by a timer of a non-real clock, which
// reports its end as a deadline the way context.WithTimeout does.
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}

// Sleep waits for d on clock c, or until ctx ends.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
