package memstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

// ListRuns implements store.Ops by filtering and sorting every run: the
// memory store holds few enough.
func (s *Store) ListRuns(_ context.Context, q store.RunQuery) ([]store.Run, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultRunLimit
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Run
	for _, r := range s.runs {
		if matches(r.rec, q) {
			rec := r.row()
			if !q.WithInput {
				rec.Input = nil
			}
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b store.Run) int { return -compareListed(store.CursorOf(a), store.CursorOf(b)) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ScanRuns implements store.Ops.
func (s *Store) ScanRuns(_ context.Context, q store.RunQuery) ([]store.Run, *store.RunCursor, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultRunLimit
	}
	docs, withInput := q.InputContains, q.WithInput
	q.InputContains = nil
	q.WithInput, q.Limit = true, limit
	read, err := s.ListRuns(context.Background(), q)
	if err != nil {
		return nil, nil, err
	}
	var reached *store.RunCursor
	if len(read) == limit {
		c := store.CursorOf(read[limit-1])
		reached = &c
	}
	out := make([]store.Run, 0, len(read))
	for _, r := range read {
		if len(docs) == 0 || slices.ContainsFunc(docs, func(doc json.RawMessage) bool { return store.JSONContains(r.Input, doc) }) {
			if !withInput {
				r.Input = nil
			}
			out = append(out, r)
		}
	}
	return out, reached, nil
}

// compareListed orders runs as listings do, ascending: by creation time,
// then by id, bytewise (as Postgres compares uuids).
func compareListed(a, b store.RunCursor) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return bytes.Compare(a.ID[:], b.ID[:])
}

func matches(r store.Run, q store.RunQuery) bool {
	switch {
	case q.Workflow != "" && r.Workflow != q.Workflow,
		q.Tenant != "" && r.Tenant != q.Tenant,
		q.IdempotencyKey != "" && r.IdempotencyKey != q.IdempotencyKey,
		len(q.Statuses) > 0 && !slices.Contains(q.Statuses, r.Status),
		!q.CreatedFrom.IsZero() && r.CreatedAt.Before(q.CreatedFrom),
		!q.CreatedTo.IsZero() && !r.CreatedAt.Before(q.CreatedTo),
		!q.FinishedFrom.IsZero() && (r.FinishedAt.IsZero() || r.FinishedAt.Before(q.FinishedFrom)),
		q.Parent != uuid.Nil && (r.Parent == nil || r.Parent.ID != q.Parent),
		q.TopLevel && r.Parent != nil,
		!q.IDPrefix.IsZero() && !q.IDPrefix.Matches(r.ID),
		!store.HasTags(r.Tags, q.Tags),
		q.After != nil && compareListed(store.CursorOf(r), *q.After) >= 0:
		return false
	}
	return len(q.InputContains) == 0 || slices.ContainsFunc(q.InputContains, func(doc json.RawMessage) bool {
		return store.JSONContains(r.Input, doc)
	})
}

// ListWorkers implements store.Ops.
func (s *Store) ListWorkers(context.Context) ([]store.Worker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	leases := map[string]int{}
	for _, t := range s.running {
		leases[t.rec.Worker]++
	}
	out := make([]store.Worker, 0, len(s.workers))
	for id, at := range s.workers {
		out = append(out, store.Worker{ID: id, HeartbeatAt: at, Leases: leases[id], Leader: id == s.leader, Versions: slices.Clone(s.workerVersions[id]),
			Labels: slices.Clone(s.workerLabels[id])})
	}
	slices.SortFunc(out, func(a, b store.Worker) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// QueueVersions implements store.Ops.
func (s *Store) QueueVersions(context.Context) ([]store.QueueVersionStat, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stats := map[string]*store.QueueVersionStat{}
	heads := map[string]int64{}
	for _, e := range s.queue.entries {
		if !e.valid() {
			continue
		}
		r := e.task.run.rec
		st, ok := stats[r.Version]
		if !ok {
			st = &store.QueueVersionStat{Workflow: r.Workflow, Version: r.Version}
			stats[r.Version] = st
		}
		st.Queued++
		if head, ok := heads[r.Version]; !ok || e.id < head {
			heads[r.Version] = e.id
			st.OldestQueuedAt = e.task.rec.UpdatedAt
		}
	}
	out := make([]store.QueueVersionStat, 0, len(stats))
	for _, st := range stats {
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b store.QueueVersionStat) int {
		return cmp.Or(strings.Compare(a.Workflow, b.Workflow), strings.Compare(a.Version, b.Version))
	})
	return out, nil
}

// QueueStats implements store.Ops. A group's head is its queued entry
// with the smallest queue id, the next of the group to be claimed.
func (s *Store) QueueStats(context.Context) ([]store.QueueStat, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type group struct{ tenant, workflow string }
	stats := map[group]*store.QueueStat{}
	heads := map[group]int64{}
	stat := func(r *run) (*store.QueueStat, group) {
		g := group{r.rec.Tenant, r.rec.Workflow}
		st, ok := stats[g]
		if !ok {
			st = &store.QueueStat{Tenant: g.tenant, Workflow: g.workflow}
			stats[g] = st
		}
		return st, g
	}
	for _, e := range s.queue.entries {
		if !e.valid() {
			continue
		}
		st, g := stat(e.task.run)
		st.Queued++
		if head, ok := heads[g]; !ok || e.id < head {
			heads[g] = e.id
			st.OldestQueuedAt = e.task.rec.UpdatedAt
		}
	}
	for _, line := range s.limits { // waiting for a concurrency slot: queued, off the ready queue
		for _, t := range line.waiting {
			if t.waiting {
				st, _ := stat(t.run)
				st.Queued++
				st.Held++
			}
		}
	}
	for _, t := range s.pacedTasks() { // waiting for their turn under a rate limit
		st, _ := stat(t.run)
		st.Queued++
		st.Paced++
	}
	for _, t := range s.running {
		st, _ := stat(t.run)
		st.Running++
	}
	// The first steps of runs waiting for a run slot or their debounce
	// window are queued too (see runlimits.go, debounce.go).
	parked := func(r *run) {
		if r.control == nil {
			return
		}
		for _, i := range r.control.parked {
			if r.tasks[i].rec.Status == store.TaskQueued {
				st, _ := stat(r)
				st.Queued++
			}
		}
	}
	for _, line := range s.runLines {
		for _, r := range line.waiting {
			parked(r)
		}
	}
	for _, r := range s.debounced {
		parked(r)
	}
	out := make([]store.QueueStat, 0, len(stats))
	for _, st := range stats {
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b store.QueueStat) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Workflow, b.Workflow))
	})
	return out, nil
}

// QueueSteps implements store.Ops.
func (s *Store) QueueSteps(_ context.Context, tenant, workflow string) ([]store.QueueStepStat, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type group struct {
		version string
		step    int
	}
	stats := map[group]*store.QueueStepStat{}
	add := func(t *task, held, paced bool) {
		if t.run.rec.Tenant != tenant || t.run.rec.Workflow != workflow {
			return
		}
		g := group{t.run.rec.Version, t.rec.Key.Step}
		st, ok := stats[g]
		if !ok {
			st = &store.QueueStepStat{Version: g.version, Step: g.step, OldestQueuedAt: t.rec.UpdatedAt}
			stats[g] = st
		}
		st.Queued++
		if held {
			st.Held++
		}
		if paced {
			st.Paced++
		}
		if t.rec.UpdatedAt.Before(st.OldestQueuedAt) {
			st.OldestQueuedAt = t.rec.UpdatedAt
		}
	}
	for _, e := range s.queue.entries {
		if e.valid() {
			add(e.task, false, false)
		}
	}
	for _, line := range s.limits {
		for _, t := range line.waiting {
			if t.waiting {
				add(t, true, false)
			}
		}
	}
	for _, t := range s.pacedTasks() {
		add(t, false, true)
	}
	out := make([]store.QueueStepStat, 0, len(stats))
	for _, st := range stats {
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b store.QueueStepStat) int {
		return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(a.Step, b.Step))
	})
	return out, nil
}

// ListWorkflows implements store.Ops.
func (s *Store) ListWorkflows(context.Context) ([]store.WorkflowVersion, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.WorkflowVersion, 0, len(s.workflows))
	for _, w := range s.workflows {
		w.Spec = append([]byte(nil), w.Spec...)
		out = append(out, w)
	}
	slices.SortFunc(out, compareVersions)
	return out, nil
}

// InFlight implements store.Ops by reading every run: the memory store
// holds few enough.
func (s *Store) InFlight(_ context.Context, limit int) ([]store.VersionInFlight, bool, error) {
	if limit <= 0 {
		limit = store.DefaultInFlightLimit
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	byVersion := map[string]*store.VersionInFlight{}
	steps := map[string]map[int]int{}
	for _, r := range s.runs {
		if r.rec.Status != store.RunRunning {
			continue
		}
		v, ok := byVersion[r.rec.Version]
		if !ok {
			v = &store.VersionInFlight{Version: store.WorkflowVersion{Version: r.rec.Version, Name: r.rec.Workflow}}
			if w, ok := s.workflows[r.rec.Version]; ok {
				v.Version.Spec, v.Version.SavedAt = append([]byte(nil), w.Spec...), w.SavedAt
			}
			byVersion[r.rec.Version] = v
			steps[r.rec.Version] = map[int]int{}
		}
		v.Runs++
		for _, t := range r.tasks {
			if !t.rec.Status.Terminal() {
				steps[r.rec.Version][t.rec.Key.Step]++
			}
		}
	}
	out := make([]store.VersionInFlight, 0, len(byVersion))
	for version, v := range byVersion {
		for _, step := range slices.Sorted(maps.Keys(steps[version])) {
			v.Steps = append(v.Steps, store.StepInFlight{Step: step, Runs: steps[version][step]})
		}
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b store.VersionInFlight) int {
		return cmp.Or(cmp.Compare(a.Version.Name, b.Version.Name), cmp.Compare(a.Version.Version, b.Version.Version))
	})
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// compareVersions orders stored versions by name, then newest first, then
// by version.
func compareVersions(a, b store.WorkflowVersion) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), b.SavedAt.Compare(a.SavedAt), cmp.Compare(a.Version, b.Version))
}

// RunActivity implements store.Ops by reading every run: the memory store
// holds few enough.
func (s *Store) RunActivity(_ context.Context, q store.ActivityQuery) (store.Activity, error) {
	a := store.NewActivity(q)
	bucket := func(t time.Time) (int, bool) {
		if t.IsZero() || t.Before(q.From) || !t.Before(q.To()) || q.Bucket <= 0 {
			return 0, false
		}
		return int(t.Sub(q.From) / q.Bucket), true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.runs {
		if r.rec.Status == store.RunRunning {
			a.Running++
		}
		if i, ok := bucket(r.rec.CreatedAt); ok {
			a.Buckets[i].Created++
		}
		if i, ok := bucket(r.rec.FinishedAt); ok && r.rec.Status != store.RunRunning {
			a.Buckets[i].AddFinished(r.rec.Status, 1)
		}
	}
	return a, nil
}

// EventCounts implements store.Ops.
func (s *Store) EventCounts(_ context.Context, ids []uuid.UUID) (map[uuid.UUID]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[uuid.UUID]int, len(ids))
	for _, id := range ids {
		if r, ok := s.runs[id]; ok {
			out[id] = len(r.events)
		}
	}
	return out, nil
}

// ChildRunCounts implements store.Ops.
func (s *Store) ChildRunCounts(_ context.Context, id uuid.UUID) ([]store.ChildRunCount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return nil, nil
	}
	var out []store.ChildRunCount
	for _, t := range r.tasks {
		counts := map[store.RunStatus]int{}
		for _, k := range s.children[t.rec.Key] {
			counts[k.rec.Status]++
		}
		for _, st := range []store.RunStatus{store.RunCancelled, store.RunCompleted, store.RunFailed, store.RunRunning} {
			if n := counts[st]; n > 0 {
				out = append(out, store.ChildRunCount{Step: t.rec.Key.Step, Status: st, Runs: n})
			}
		}
	}
	return out, nil
}

// ChildRunPreviews implements store.Ops.
func (s *Store) ChildRunPreviews(_ context.Context, parents []uuid.UUID, first int) ([]store.ChildRunPreview, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.ChildRunPreview
	seen := map[uuid.UUID]bool{}
	for _, id := range parents {
		r, ok := s.runs[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		p := store.ChildRunPreview{Parent: id, Counts: map[store.RunStatus]int{}}
		var kids []store.Run
		for _, t := range r.tasks {
			for _, k := range s.children[t.rec.Key] {
				p.Counts[k.rec.Status]++
				kids = append(kids, k.row())
			}
		}
		if len(kids) == 0 {
			continue
		}
		slices.SortFunc(kids, func(a, b store.Run) int {
			return cmp.Or(cmp.Compare(a.Parent.StepIndex, b.Parent.StepIndex), cmp.Compare(a.Parent.Index, b.Parent.Index),
				compareListed(store.CursorOf(a), store.CursorOf(b)))
		})
		for _, k := range kids[:min(len(kids), max(first, 0))] {
			k.Input = nil
			p.First = append(p.First, k)
		}
		out = append(out, p)
	}
	return out, nil
}

// Unserved implements store.Ops.
func (s *Store) Unserved(_ context.Context, q store.UnservedQuery) ([]store.Unserved, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var live [][]string
	for id, at := range s.workers {
		if !at.Before(q.AliveSince) {
			live = append(live, s.workerLabels[id])
		}
	}
	groups := map[string]*store.Unserved{}
	for _, e := range s.queue.entries {
		t := e.task
		if !e.valid() || len(t.labels) == 0 || slices.ContainsFunc(live, func(have []string) bool { return spec.LabelsInclude(have, t.labels) }) {
			continue
		}
		key := t.run.rec.Workflow + "\x00" + strings.Join(t.labels, ",")
		g, ok := groups[key]
		if !ok {
			g = &store.Unserved{Workflow: t.run.rec.Workflow, Labels: slices.Clone(t.labels), OldestQueuedAt: t.rec.UpdatedAt}
			groups[key] = g
		}
		g.Tasks++
		if t.rec.UpdatedAt.Before(g.OldestQueuedAt) {
			g.OldestQueuedAt = t.rec.UpdatedAt
		}
	}
	out := make([]store.Unserved, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b store.Unserved) int {
		if a.Tasks != b.Tasks {
			return b.Tasks - a.Tasks
		}
		if c := strings.Compare(a.Workflow, b.Workflow); c != 0 {
			return c
		}
		return strings.Compare(strings.Join(a.Labels, ","), strings.Join(b.Labels, ","))
	})
	if len(out) > q.Limit {
		out = out[:max(q.Limit, 0)]
	}
	return out, nil
}
