package executor

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// claims are the tasks this engine owns: from the moment it claims them
// until their result is recorded, or until it hands them back. The store
// sees them RUNNING all that time, so all that time they are heartbeated,
// including while a finished step's result waits to be recorded.
//
// Ownership and the store can disagree: a claim whose answer was lost with
// its connection leaves tasks the store says this worker holds but the
// engine never saw; a step stopped because its run ended may have been a
// newer attempt than the one the run's end was about. Heartbeats reconcile
// the two (see reconcile): the store's leases are compared with the
// attempts owned here, and what the engine holds no attempt for is handed
// back.
type claims struct {
	mu    sync.Mutex
	byKey map[store.TaskKey]*claim
	// runs counts the claims of each run in byKey, so that stopping a
	// run's steps looks at no other claim (see stopRun; every finished
	// run anywhere asks).
	runs map[uuid.UUID]int
	// claiming holds the time of each claim under way (sent to the store,
	// its tasks not yet owned), by token: their tasks may already be
	// leased without being owned, and must not be taken for orphans.
	claiming map[int]time.Time
	token    int
	// suspects are the leases the last reconciliation found unowned; only
	// those still unowned at the next one are handed back, so that a task
	// whose result was recorded between reading the leases and reading
	// ownership is never mistaken for an orphan.
	suspects map[store.Attempt]bool
}

type claim struct {
	attempt int
	run     uuid.UUID
	// The run's facts, for logs and metrics about the task.
	workflow, version, tenant string
	// cancel stops the step's code while it runs; nil before and after.
	cancel context.CancelCauseFunc
	// handler is true for the failure handler, which runs after its run
	// ended and must not be stopped by that.
	handler bool
	// abandoned is true when the engine stopped the step's code on
	// shutdown: the attempt ran, and counts.
	abandoned bool
	// runEnded is true once the run ended while the task was owned: a
	// handed-off task still waiting for a slot is then never started.
	runEnded bool
}

func newClaims() claims {
	return claims{byKey: map[store.TaskKey]*claim{}, runs: map[uuid.UUID]int{}, claiming: map[int]time.Time{}}
}

// put owns cl for key, in place of any claim of it; the caller holds mu.
func (c *claims) put(key store.TaskKey, cl *claim) {
	if _, ok := c.byKey[key]; !ok {
		c.runs[key.Run]++
	}
	c.byKey[key] = cl
}

// drop forgets the claim of key; the caller holds mu.
func (c *claims) drop(key store.TaskKey) {
	if _, ok := c.byKey[key]; !ok {
		return
	}
	delete(c.byKey, key)
	if c.runs[key.Run]--; c.runs[key.Run] <= 0 {
		delete(c.runs, key.Run)
	}
}

// begin records that a claim stamped now is under way; end it with end.
func (c *claims) begin(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token++
	c.claiming[c.token] = now
	return c.token
}

// end records that the claim under way is over, owning the tasks it took.
func (c *claims) end(token int, tasks []store.ClaimedTask) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.claiming, token)
	for _, t := range tasks {
		c.put(t.Key, newClaim(t))
	}
}

func newClaim(t store.ClaimedTask) *claim {
	return &claim{attempt: t.Attempt, run: t.Key.Run, workflow: t.Workflow, version: t.Version, tenant: t.Tenant}
}

// about returns the facts of an owned attempt: its run's workflow,
// version and tenant.
func (c *claims) about(a store.Attempt) (cl claim, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, ok := c.byKey[a.Key]; ok && got.attempt == a.Attempt {
		return *got, true
	}
	return claim{}, false
}

// started records that a claimed task's code is running.
func (c *claims) started(t store.ClaimedTask, handler bool, cancel context.CancelCauseFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.byKey[t.Key]
	if !ok || cl.attempt != t.Attempt {
		cl = newClaim(t)
		c.put(t.Key, cl)
	}
	cl.cancel, cl.handler = cancel, handler
}

// ended records that a task's code returned.
func (c *claims) ended(t store.ClaimedTask) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.byKey[t.Key]; ok && cl.attempt == t.Attempt {
		cl.cancel = nil
	}
}

// release forgets tasks whose result was recorded or dropped, or that are
// being handed back.
func (c *claims) release(attempts ...store.Attempt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range attempts {
		if cl, ok := c.byKey[a.Key]; ok && cl.attempt == a.Attempt {
			c.drop(a.Key)
		}
	}
}

// abandonRunning records that the code running now is being stopped on
// shutdown.
func (c *claims) abandonRunning() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.byKey {
		if cl.cancel != nil {
			cl.abandoned = true
		}
	}
}

// abandonedAndRest splits the owned attempts into those abandoned on
// shutdown and the others.
func (c *claims) abandonedAndRest() (abandoned, rest []store.Attempt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, cl := range c.byKey {
		a := store.Attempt{Key: k, Attempt: cl.attempt}
		if cl.abandoned {
			abandoned = append(abandoned, a)
		} else {
			rest = append(rest, a)
		}
	}
	return abandoned, rest
}

// runsCode reports whether the code of a step of run (not its failure
// handler) is running here: one that stopRun would stop.
func (c *claims) runsCode(run uuid.UUID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs[run] == 0 {
		return false
	}
	for _, cl := range c.byKey {
		if cl.run == run && !cl.handler && cl.cancel != nil {
			return true
		}
	}
	return false
}

// stopRun cancels the running steps of a run (but not its failure
// handler), and marks its other tasks so that those waiting for a slot
// are not started.
func (c *claims) stopRun(run uuid.UUID, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs[run] == 0 {
		return
	}
	for _, cl := range c.byKey {
		if cl.run == run && !cl.handler {
			cl.runEnded = true
			if cl.cancel != nil {
				cl.cancel(cause)
			}
		}
	}
}

// stop cancels those of the given attempts whose code is running, and
// returns how many it cancelled.
func (c *claims) stop(attempts []store.Attempt, cause error) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, a := range attempts {
		if cl, ok := c.byKey[a.Key]; ok && cl.attempt == a.Attempt && cl.cancel != nil {
			cl.cancel(cause)
			n++
		}
	}
	return n
}

// heldRuns lists the runs this engine holds tasks of.
func (c *claims) heldRuns() []uuid.UUID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]uuid.UUID, 0, len(c.runs))
	for id, n := range c.runs {
		if n > 0 {
			out = append(out, id)
		}
	}
	return out
}

// owned lists the owned attempts.
func (c *claims) owned() []store.Attempt {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]store.Attempt, 0, len(c.byKey))
	for k, cl := range c.byKey {
		out = append(out, store.Attempt{Key: k, Attempt: cl.attempt})
	}
	return out
}

// reconcile compares the leases the store says this worker holds (read
// after taking the snapshot before) with what it owns. It returns lost,
// the attempts of before the store no longer leases to this worker (their
// results were recorded, or their tasks were cancelled or recovered
// elsewhere), and orphans, the leases this worker has owned no attempt
// for at this reconciliation and the previous one.
func (c *claims) reconcile(before []store.Attempt, held []store.Lease) (lost []store.Attempt, orphans []store.Lease) {
	leased := make(map[store.Attempt]bool, len(held))
	for _, l := range held {
		leased[l.Attempt] = true
	}
	for _, a := range before {
		if !leased[a] {
			lost = append(lost, a)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var oldestClaim time.Time
	for _, at := range c.claiming {
		if oldestClaim.IsZero() || at.Before(oldestClaim) {
			oldestClaim = at
		}
	}
	suspects := map[store.Attempt]bool{}
	for _, l := range held {
		if cl, ok := c.byKey[l.Key]; ok && cl.attempt == l.Attempt.Attempt {
			continue
		}
		// A claim under way may have leased it; it is stamped no earlier
		// than that claim's time.
		if !oldestClaim.IsZero() && !l.ClaimedAt.Before(oldestClaim) {
			continue
		}
		suspects[l.Attempt] = true
		if c.suspects[l.Attempt] {
			orphans = append(orphans, l)
		}
	}
	c.suspects = suspects
	return lost, orphans
}

// attempts lists every attempt a batch of results is about.
func attempts(r store.Results) []store.Attempt {
	out := make([]store.Attempt, 0, r.Len())
	for _, c := range r.Completions {
		out = append(out, c.Attempt)
	}
	for _, rt := range r.Retries {
		out = append(out, rt.Attempt)
	}
	for _, f := range r.Failures {
		out = append(out, f.Attempt)
	}
	for _, sl := range r.Sleeps {
		out = append(out, sl.Attempt)
	}
	for _, sp := range r.Spawns {
		out = append(out, sp.Attempt)
	}
	for _, aw := range r.Awaits {
		out = append(out, aw.Attempt)
	}
	return out
}
