package runtime

import (
	"context"
	"sync"

	"github.com/effectivelabs/trellis/runtime/store"
)

// claims are the tasks this engine owns: from the moment it claims them
// until their result is recorded (or dropped). The store sees them RUNNING
// all that time, so all that time they are heartbeated, including while a
// finished step's result waits to be flushed.
type claims struct {
	mu    sync.Mutex
	byKey map[store.TaskKey]*claim
}

type claim struct {
	attempt int
	run     RunID
	// cancel stops the step's code while it runs; nil before and after.
	cancel context.CancelCauseFunc
	// handler is true for the failure handler, which runs after its run
	// ended and must not be stopped by that.
	handler bool
}

// own records newly claimed tasks.
func (c *claims) own(tasks []store.ClaimedTask) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range tasks {
		c.byKey[t.Key] = &claim{attempt: t.Attempt, run: t.Key.Run}
	}
}

// started records that a claimed task's code is running.
func (c *claims) started(t store.ClaimedTask, handler bool, cancel context.CancelCauseFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.byKey[t.Key]
	if !ok || cl.attempt != t.Attempt {
		cl = &claim{attempt: t.Attempt, run: t.Key.Run}
		c.byKey[t.Key] = cl
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

// release forgets tasks whose result was recorded or dropped.
func (c *claims) release(attempts ...store.Attempt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range attempts {
		if cl, ok := c.byKey[a.Key]; ok && cl.attempt == a.Attempt {
			delete(c.byKey, a.Key)
		}
	}
}

// releaseClaimed forgets claimed tasks this engine will not work on.
func (c *claims) releaseClaimed(tasks []store.ClaimedTask) {
	for _, t := range tasks {
		c.release(attemptOf(t))
	}
}

// stopRun cancels the running steps of a run (but not its failure
// handler).
func (c *claims) stopRun(run RunID, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.byKey {
		if cl.run == run && !cl.handler && cl.cancel != nil {
			cl.cancel(cause)
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

// owned lists the owned attempts, for heartbeats.
func (c *claims) owned() []store.Attempt {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]store.Attempt, 0, len(c.byKey))
	for k, cl := range c.byKey {
		out = append(out, store.Attempt{Key: k, Attempt: cl.attempt})
	}
	return out
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
	return out
}
