package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// UnservedWork is queued work that no live worker can claim: the tasks on
// the ready queue of one workflow version that no worker alive (one that
// heartbeated within Config.StaleAfter) serves. A worker claims only the
// tasks of the versions it serves (see Engine.ServedVersions), so these
// wait, visibly, rather than run on code of another version: typically
// the runs of an older version during a deploy, until a worker that still
// serves it comes back. It is the one home of the concept: trellis queue
// and trellis workers, trellis runs show, the dashboard's queue page and
// the trellis.queue.unserved gauge all read Engine.Unserved. Its JSON is
// what trellis queue -format json prints under "unserved".
type UnservedWork struct {
	Workflow string `json:"workflow"`
	Version  string `json:"version"`
	// Queued is how many of the version's tasks are on the ready queue.
	Queued int `json:"queued"`
	// OldestQueuedAt is when the task at the head of the version's queue
	// was queued.
	OldestQueuedAt time.Time `json:"oldestQueuedAt"`
	// Labels, when set, are the worker labels the tasks need (a step's
	// runsOn, "key=value", sorted) that no live worker has; Version is
	// then empty: the tasks are of every version of the workflow that
	// needs them.
	Labels []string `json:"labels,omitempty"`
	// Reason says, for people, why no live worker claims the work, and
	// what would.
	Reason string `json:"reason"`
	// Stranded is true when no worker the store knows, alive or silent,
	// serves the version, and the head of its queue has waited longer than
	// Config.StuckAfter: no worker is coming back for it. Start one that
	// serves the version (a binary built with it, or one that keeps it as
	// a former version: Engine.RegisterFormer), or cancel its runs.
	Stranded bool `json:"stranded,omitempty"`
}

// Unserved lists the queued work no live worker can claim, by workflow,
// then version (see UnservedWork): the tasks of versions no live worker
// serves, then those that need worker labels no live worker has (the
// store's Unserved, at most 100 groups). It reads the ready queue by
// version and the workers (their heartbeats and the versions and labels
// they announced), so its cost grows with the tasks queued, not with
// history. Times are in UTC.
func (e *Engine) Unserved(ctx context.Context) ([]UnservedWork, error) {
	queued, err := e.store.QueueVersions(ctx)
	if err != nil {
		return nil, err
	}
	if len(queued) == 0 {
		return nil, nil
	}
	workers, err := e.store.ListWorkers(ctx)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now()
	out := unserved(queued, workers, now, e.cfg.StaleAfter, e.cfg.StuckAfter)
	labelled, err := e.store.Unserved(ctx, store.UnservedQuery{AliveSince: now.Add(-e.cfg.StaleAfter), Limit: 100})
	if err != nil {
		return nil, err
	}
	for _, u := range labelled {
		out = append(out, UnservedWork{Workflow: u.Workflow, Queued: u.Tasks, OldestQueuedAt: u.OldestQueuedAt.UTC(), Labels: u.Labels,
			Reason: fmt.Sprintf("the tasks need worker labels %s that no live worker has: start a worker with them (Config.Labels)", strings.Join(u.Labels, ","))})
	}
	slices.SortStableFunc(out, func(a, b UnservedWork) int { return strings.Compare(a.Workflow, b.Workflow) })
	return out, nil
}

// unserved is Unserved's rule, given what it read.
func unserved(queued []store.QueueVersionStat, workers []store.Worker, now time.Time, staleAfter, strandedAfter time.Duration) []UnservedWork {
	var out []UnservedWork
	for _, q := range queued {
		var silent []store.Worker
		live := false
		for _, w := range workers {
			if !slices.Contains(w.Versions, q.Version) {
				continue
			}
			if now.Sub(w.HeartbeatAt) < staleAfter {
				live = true
				break
			}
			silent = append(silent, w)
		}
		if live {
			continue
		}
		u := UnservedWork{Workflow: q.Workflow, Version: q.Version, Queued: q.Queued, OldestQueuedAt: q.OldestQueuedAt.UTC()}
		switch {
		case len(silent) > 0:
			last := slices.MaxFunc(silent, func(a, b store.Worker) int { return a.HeartbeatAt.Compare(b.HeartbeatAt) })
			u.Reason = fmt.Sprintf("no live worker serves version %s: %d silent worker(s) did, the last (%s) heartbeated at %s",
				q.Version, len(silent), last.ID, last.HeartbeatAt.UTC().Format(time.RFC3339))
		default:
			u.Reason = fmt.Sprintf("no worker serves version %s: start one built with it, or one that keeps it as a former version", q.Version)
			u.Stranded = strandedAfter > 0 && !q.OldestQueuedAt.IsZero() && now.Sub(q.OldestQueuedAt) > strandedAfter
		}
		out = append(out, u)
	}
	return out
}
