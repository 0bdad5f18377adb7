package telemetry

import (
	"log/slog"
	"sync"
	"time"
)

// Faults logs the failures of a recurring operation once per outage
// rather than once per round: the first failure, a reminder every
// FaultReminder while it lasts, and the recovery. Operations are named
// in the words of the log line ("claiming tasks"); one Faults serves a
// whole engine.
type Faults struct {
	log *slog.Logger
	mu  sync.Mutex
	ops map[string]*outage
}

type outage struct {
	since, logged time.Time
	failures      int
}

// FaultReminder is how often a failure that lasts is logged again.
const FaultReminder = 30 * time.Second

// NewFaults returns a Faults logging to log.
func NewFaults(log *slog.Logger) *Faults {
	return &Faults{log: log, ops: map[string]*outage{}}
}

// Failed records a failure of op at now.
func (f *Faults) Failed(op string, err error, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.ops[op]
	if !ok {
		o = &outage{since: now}
		f.ops[op] = o
	}
	o.failures++
	if !ok || now.Sub(o.logged) >= FaultReminder {
		o.logged = now
		f.log.Error(op+" failed; retrying", "error", err, "failures", o.failures, "since", o.since)
	}
}

// OK records a success of op at now, logging the end of an outage.
func (f *Faults) OK(op string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.ops[op]; ok {
		delete(f.ops, op)
		f.log.Info(op+" works again", "failures", o.failures, "outage", now.Sub(o.since))
	}
}

// Track records the result of one round of op at now: a failure (unless
// the operation was stopped, stopped is true) or a success.
func (f *Faults) Track(op string, err error, stopped bool, now time.Time) {
	switch {
	case err == nil:
		f.OK(op, now)
	case !stopped:
		f.Failed(op, err, now)
	}
}
