package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// How callers wait for runs to end. Wait and WaitMany share one
// mechanism: a caller keeps a watch on its runs, which the engine signals
// whenever it learns that one of them may have ended (a store
// notification, which a started engine listens for, or a result or
// cancellation this engine recorded itself); the caller then reads those
// runs. Notifications are best effort, so the caller also reads all the
// runs it still waits for every PollInterval. A read that fails with a
// transient store error (a database restart, a lost connection) is made
// again at the next poll, for as long as the caller's context lasts.

// Batch sizes of WaitMany's reads: how many runs' statuses one
// RunStatuses call reads, and how many runs' results one GetRuns call.
const (
	statusBatch = 5000
	resultBatch = 500
)

// Wait waits until the run ends and returns its result, whose Err is
// returned as the error. The result is final (see RunResult.Final): a
// failed run's is returned once its failure handler has ended too. It returns early with ctx's error. It rides out
// transient store failures (a database restart, a lost connection) and
// returns other errors. On an engine with a Driver it drives the engine
// instead of waiting (see Driver), and a run that is still waiting on time
// is returned with ErrStillRunning. To wait for many runs, use WaitMany.
func (e *Engine) Wait(ctx context.Context, id RunID) (*RunResult, error) {
	if d := e.mode.currentDriver(); d != nil {
		return d.wait(ctx, id)
	}
	ids := []RunID{id}
	w := e.waiters.watch(ids)
	defer e.waiters.unwatch(ids, w)
	var res *RunResult
	for {
		e.waiters.signalled(w) // the signal is what matters; the run is known
		current, err := e.Result(ctx, id)
		switch {
		case err == nil:
			res = current
			if res.Final() {
				err := res.Err()
				return res, err
			}
		case !isTransient(err) || ctx.Err() != nil:
			return nil, err
		}
		t := e.clock.NewTimer(e.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, ctx.Err()
		case <-w.signal:
		case <-t.C():
		}
		t.Stop()
	}
}

// WaitMany waits until every run of ids has ended and returns their
// results in the order of ids (a run given twice has its result twice):
// what Wait returns for each, the way each run ended being its result's
// Err. It costs about what waiting for one run costs, however many runs
// it waits for: it runs in the caller's goroutine, is woken by the
// notifications that wake Wait (on a started engine, runs ending in any
// process; otherwise those this engine ends) and then reads only the runs
// that ended, and every Config.PollInterval reads the statuses of all the
// runs it still waits for, thousands to a read.
//
// Its error says what kept it from waiting: ctx ended (the results of the
// runs that had ended are returned with it, nil for the others), an id
// names no run (ErrRunNotFound, naming the id), or the store failed other
// than transiently: like Wait, it rides out transient failures (a
// database restart, a lost connection), reading again at the next poll.
// On an engine with a Driver it drives the engine instead of waiting, as
// Wait does, and returns every run's current result, with ErrStillRunning
// when some runs are still waiting on time.
func (e *Engine) WaitMany(ctx context.Context, ids []RunID) ([]*RunResult, error) {
	if d := e.mode.currentDriver(); d != nil {
		return d.waitMany(ctx, ids)
	}
	m := newManyWait(ids)
	if len(m.pending) == 0 {
		return m.results(), nil
	}
	w := e.waiters.watch(m.unique)
	defer e.waiters.unwatch(m.unique, w)
	all := true // read the status of every run still waited for
	for {
		var err error
		if all {
			err = e.readStatuses(ctx, m)
		} else {
			err = e.readEnded(ctx, m, m.waitingFor(e.waiters.signalled(w)))
		}
		switch {
		case err == nil:
			all = false
		case ctx.Err() != nil:
			return m.results(), m.stopped(ctx.Err())
		case !isTransient(err):
			return nil, err
		default:
			all = true // what ended meanwhile is read at the next poll
		}
		if len(m.pending) == 0 {
			return m.results(), nil
		}
		t := e.clock.NewTimer(e.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return m.results(), m.stopped(ctx.Err())
		case <-w.signal:
		case <-t.C():
			all = true
		}
		t.Stop()
	}
}

// manyWait is what WaitMany knows of the runs it waits for.
type manyWait struct {
	ids     []RunID // as the caller gave them
	unique  []RunID
	pending map[RunID]bool
	ended   map[RunID]*RunResult
}

func newManyWait(ids []RunID) *manyWait {
	m := &manyWait{ids: ids, pending: make(map[RunID]bool, len(ids)), ended: map[RunID]*RunResult{}}
	for _, id := range ids {
		if !m.pending[id] {
			m.pending[id] = true
			m.unique = append(m.unique, id)
		}
	}
	return m
}

// waitingFor returns those of ids still waited for, once each.
func (m *manyWait) waitingFor(ids []RunID) []RunID {
	var out []RunID
	seen := make(map[RunID]bool, len(ids))
	for _, id := range ids {
		if m.pending[id] && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// end records the result of a run that ended.
func (m *manyWait) end(res *RunResult) {
	if m.pending[res.ID] {
		delete(m.pending, res.ID)
		m.ended[res.ID] = res
	}
}

// results lists the results in the caller's order, nil for runs that
// have not ended.
func (m *manyWait) results() []*RunResult {
	out := make([]*RunResult, len(m.ids))
	for i, id := range m.ids {
		out[i] = m.ended[id]
	}
	return out
}

func (m *manyWait) stopped(cause error) error {
	return fmt.Errorf("waiting for %d runs: %d had not ended: %w", len(m.unique), len(m.pending), cause)
}

// readStatuses reads the status of every run still waited for, then the
// results of those that ended.
func (e *Engine) readStatuses(ctx context.Context, m *manyWait) error {
	var ended []RunID
	for chunk := range slices.Chunk(slices.Collect(maps.Keys(m.pending)), statusBatch) {
		statuses, err := e.store.RunStatuses(ctx, chunk)
		if err != nil {
			return err
		}
		for _, id := range chunk {
			status, ok := statuses[id]
			switch {
			case !ok:
				return fmt.Errorf("run %s: %w", id, ErrRunNotFound)
			case status.Terminal():
				ended = append(ended, id)
			}
		}
	}
	return e.readEnded(ctx, m, ended)
}

// readEnded reads the results of runs that may have ended (distinct ids)
// and records those that have.
func (e *Engine) readEnded(ctx context.Context, m *manyWait, ids []RunID) error {
	for chunk := range slices.Chunk(ids, resultBatch) {
		results, err := e.results(ctx, chunk)
		if err != nil {
			return err
		}
		for _, res := range results {
			if res.Final() {
				m.end(res)
			}
		}
	}
	return nil
}

// results reads the results of runs (distinct ids) in one store read, in
// no particular order. An id that names no run is an ErrRunNotFound.
func (e *Engine) results(ctx context.Context, ids []RunID) ([]*RunResult, error) {
	runs, err := e.store.GetRuns(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(runs) < len(ids) {
		found := make(map[RunID]bool, len(runs))
		for _, r := range runs {
			found[r.ID] = true
		}
		for _, id := range ids {
			if !found[id] {
				return nil, fmt.Errorf("run %s: %w", id, ErrRunNotFound)
			}
		}
	}
	out := make([]*RunResult, len(runs))
	for i, r := range runs {
		def, err := e.definition(ctx, r.Version)
		if err != nil {
			return nil, err
		}
		out[i] = resultOf(def, r.Run, r.Tasks)
	}
	return out, nil
}

// waitMany drives the engine until nothing more can happen now and
// returns the runs' states.
func (d *Driver) waitMany(ctx context.Context, ids []RunID) ([]*RunResult, error) {
	if _, err := d.RunUntilIdle(ctx); err != nil {
		return nil, err
	}
	m := newManyWait(ids)
	var running []RunID
	for chunk := range slices.Chunk(m.unique, resultBatch) {
		results, err := d.e.results(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, res := range results {
			m.ended[res.ID] = res // ended or not: its current state
			if !res.Status.Terminal() {
				running = append(running, res.ID)
			}
		}
	}
	out := m.results()
	if len(running) > 0 {
		first := slices.IndexFunc(out, func(r *RunResult) bool { return !r.Status.Terminal() })
		return out, fmt.Errorf("%d of %d runs wait on time, run %s first: %w", len(running), len(m.unique), out[first].ID, ErrStillRunning)
	}
	return out, nil
}
