package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/effectivelabs/trellis/runtime/store"
)

// The methods in this file drive an engine by hand, without Start: each
// does one kind of work to completion and returns. Test kits use them to
// run workflows deterministically under a virtual clock (see trellistest);
// a started engine does the same work in its background loops.

var errStarted = errors.New("engine is started: drive it by hand only when it is not")

// ProcessReady claims ready tasks of registered workflows and executes
// them, batch after batch, until none is ready; it returns how many tasks
// it processed. The steps of a batch run concurrently; their results are
// recorded in claim order.
func (e *Engine) ProcessReady(ctx context.Context) (int, error) {
	if e.isStarted() {
		return 0, errStarted
	}
	names := e.workflowNames()
	if len(names) == 0 {
		return 0, nil
	}
	total := 0
	for {
		claimed, err := e.claim(ctx, names, e.cfg.ClaimBatch)
		if err != nil {
			return total, fmt.Errorf("claiming tasks: %w", err)
		}
		if len(claimed) == 0 {
			return total, nil
		}
		total += len(claimed)
		jobs, batch, err := e.plan(ctx, claimed)
		if err != nil {
			e.handBack(ctx, attemptsOf(claimed), "the worker could not start the task: "+cleanText(err.Error()), false)
			return total, err
		}
		results := make([]store.Results, len(jobs))
		kept := make([]bool, len(jobs))
		var wg sync.WaitGroup
		for i, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], kept[i] = e.execute(ctx, j)
			}()
		}
		wg.Wait()
		for i := range jobs {
			if kept[i] {
				merge(&batch, results[i])
			}
		}
		if batch.Len() == 0 {
			continue
		}
		batch.Now = e.clock.Now()
		res, err := e.store.Finish(ctx, batch)
		if err != nil {
			e.handBack(ctx, attempts(batch), "the worker could not record the task's result", false)
			return total, fmt.Errorf("recording task results: %w", err)
		}
		e.afterFinish(batch, res)
	}
}

// FireTimers fires every durable timer that is due: sleeping tasks wake
// and retrying tasks are queued for their next attempt. It returns how
// many fired.
func (e *Engine) FireTimers(ctx context.Context) (int, error) {
	const batch = 1000
	total := 0
	for {
		n, err := e.store.FireTimers(ctx, e.clock.Now(), batch)
		total += n
		if err != nil {
			return total, fmt.Errorf("firing timers: %w", err)
		}
		if n < batch {
			return total, nil
		}
	}
}

// RecoverTasks re-queues (or fails, when out of attempts) running tasks
// whose worker stopped heartbeating more than Config.StaleAfter ago.
func (e *Engine) RecoverTasks(ctx context.Context) (store.RecoverResult, error) {
	const batch = 1000
	var total store.RecoverResult
	for {
		now := e.clock.Now()
		res, err := e.store.RecoverTasks(ctx, store.Recover{StaleBefore: now.Add(-e.cfg.StaleAfter), Limit: batch, Now: now})
		total.Requeued = append(total.Requeued, res.Requeued...)
		total.Failed = append(total.Failed, res.Failed...)
		if err != nil {
			return total, fmt.Errorf("recovering tasks: %w", err)
		}
		if n := len(res.Requeued) + len(res.Failed); n > 0 {
			e.log.Info("recovered tasks of dead workers", "requeued", len(res.Requeued), "failed", len(res.Failed))
		}
		if len(res.Requeued)+len(res.Failed) < batch {
			return total, nil
		}
	}
}

func (e *Engine) isStarted() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started
}
