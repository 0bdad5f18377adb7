package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
)

// How the engine meets store failures: operations a caller waits on
// (creating runs, reading a run for Wait) are retried while the failure is
// transient, for up to transientBudget; the loops of a started engine
// (claiming, heartbeating, recording, firing timers) simply try again on
// their next round; and a task the engine cannot go on with is handed back
// (see the executor), never left RUNNING without an attempt.

// transientBudget bounds how long a caller-facing operation retries a
// transient store failure (a database restart takes a few seconds).
const transientBudget = 15 * time.Second

// isTransient reports a store failure worth retrying.
func isTransient(err error) bool { return errors.Is(err, store.ErrTransient) }

// retryTransient calls op until it succeeds, fails for another reason,
// ctx ends or transientBudget has passed, backing off between tries.
func retryTransient(ctx context.Context, c clock.Clock, op func() error) error {
	deadline := c.Now().Add(transientBudget)
	backoff := 50 * time.Millisecond
	for {
		err := op()
		if err == nil || !isTransient(err) || !c.Now().Before(deadline) {
			return err
		}
		if clock.Sleep(ctx, c, backoff) != nil {
			return err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
