package dag

import (
	"math"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

// backoff is the wait before retry number retry (1 for the first retry):
// InitialDelay * BackoffFactor^(retry-1), capped at MaxDelay.
func backoff(p spec.RetryPolicy, retry int) time.Duration {
	if retry < 1 {
		retry = 1
	}
	factor := p.BackoffFactor
	if factor < 1 {
		factor = 1
	}
	d := float64(p.InitialDelay) * math.Pow(factor, float64(retry-1))
	if p.MaxDelay > 0 && d > float64(p.MaxDelay) {
		return p.MaxDelay
	}
	if d > math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}

// Retry decides what follows a failed attempt (attempts count from 1): when
// another attempt is allowed it returns the backoff before it and true.
// A non-retryable error is never retried.
func Retry(p spec.RetryPolicy, attempt int, retryable bool) (time.Duration, bool) {
	if !retryable || attempt > p.MaxRetries {
		return 0, false
	}
	return backoff(p, attempt), true
}

// InitialPending returns, for every step, how many parents it waits for,
// and the steps that are ready at once (roots). The failure handler is
// never ready at creation: it is queued only when the run fails.
func InitialPending(g *Graph) (pending []int, roots []int) {
	pending = make([]int, len(g.Steps))
	for i := range g.Steps {
		s := &g.Steps[i]
		pending[i] = len(s.Parents)
		if s.Kind != store.KindOnFailure && len(s.Parents) == 0 {
			roots = append(roots, i)
		}
	}
	return pending, roots
}

// Resolve records that one parent of each child has resolved (completed or
// been skipped) by decrementing pending, and returns the children that
// became ready: those whose count reached zero. Called once per resolved
// parent, it makes fan-in exact: a child is returned exactly once, by the
// last parent to resolve.
func Resolve(pending []int, children []int) (ready []int) {
	for _, c := range children {
		if pending[c] <= 0 {
			continue
		}
		pending[c]--
		if pending[c] == 0 {
			ready = append(ready, c)
		}
	}
	return ready
}

// CascadeSkip reports whether a ready step is skipped because of its
// parents: it has parents and every one of them was skipped. A step with a
// mix of skipped and completed parents runs; that is how branches merge.
func CascadeSkip(parents []store.TaskStatus) bool {
	if len(parents) == 0 {
		return false
	}
	for _, p := range parents {
		if p != store.TaskSkipped {
			return false
		}
	}
	return true
}

// Cancels reports whether a task in status s is cancelled when its run
// fails or is cancelled: every task that has not finished, including
// running ones (whose code then sees its context cancelled).
func Cancels(s store.TaskStatus) bool { return !s.Terminal() }
