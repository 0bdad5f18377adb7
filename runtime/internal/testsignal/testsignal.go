// Package testsignal owns the signals the engine's services give their
// tests: a test initialises a service's signals, then waits on them to
// learn that the service did something (fired timers, purged runs),
// instead of sleeping. Uninitialised, a signal costs a nil check.
package testsignal

import "time"

// Signal is a value a service reports to a test. Its zero value reports
// nothing.
type Signal[T any] struct {
	ch chan T
}

// Init makes the signal report, keeping up to 100 values a test has not
// read (later ones are dropped).
func (s *Signal[T]) Init() { s.ch = make(chan T, 100) }

// Signal reports v, if the signal was initialised; it never blocks.
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
	}
}

// Wait waits up to timeout for the next value; false when none came.
func (s *Signal[T]) Wait(timeout time.Duration) (T, bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case v := <-s.ch:
		return v, true
	case <-t.C:
		var zero T
		return zero, false
	}
}
