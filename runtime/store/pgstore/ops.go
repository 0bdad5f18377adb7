package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
)

// ListRuns implements store.Ops: one scan of Limit runs without
// InputContains, else scans of a window at a time until Limit runs
// match.
func (s *Store) ListRuns(ctx context.Context, q store.RunQuery) ([]store.Run, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultRunLimit
	}
	if len(q.InputContains) == 0 {
		runs, _, err := s.ScanRuns(ctx, q)
		return runs, err
	}
	q.Limit = max(limit, listWindow)
	var out []store.Run
	for {
		runs, reached, err := s.ScanRuns(ctx, q)
		if err != nil {
			return nil, err
		}
		if out = append(out, runs...); len(out) >= limit || reached == nil {
			return out[:min(len(out), limit)], nil
		}
		q.After = reached
	}
}

// listWindow is how many runs ListRuns scans at a time when the documents
// an input must contain leave out some of them.
const listWindow = 500

// ScanRuns implements store.Ops. The statement reads an index of
// schema/0005 in listing order, planned for the filters given (see
// OpsCustomPlans), and checks the documents in the same statement.
// Several statuses take one such read each, merged here: an index is read
// in order for one status at a time.
func (s *Store) ScanRuns(ctx context.Context, q store.RunQuery) ([]store.Run, *store.RunCursor, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultRunLimit
	}
	if !storableText(q.Workflow, q.Tenant, q.IdempotencyKey) || !storableTags(q.Tags) {
		// A name Postgres cannot hold as text (a NUL byte, invalid
		// UTF-8), as a person may type into a search, is no run's: the
		// listing is empty, as the memory store finds it, not an error.
		return []store.Run{}, nil, nil
	}
	p := dbsqlc.OpsRunsScanParams{
		Workflow: q.Workflow, Tenant: q.Tenant, IdempotencyKey: q.IdempotencyKey,
		CreatedFrom: timeOrNull(q.CreatedFrom), CreatedTo: timeOrNull(q.CreatedTo), FinishedFrom: timeOrNull(q.FinishedFrom),
		Lim:       int32(limit),
		WithInput: q.WithInput, InputContains: documents(q.InputContains),
		Tags: tagsFilter(q.Tags),
	}
	if q.After != nil {
		p.AfterCreated, p.AfterID = &q.After.CreatedAt, q.After.ID
	}
	p.Parent = q.Parent // the nil id for any
	p.TopLevel = q.TopLevel
	if !q.IDPrefix.IsZero() {
		p.ByID = true
		p.IDFrom, p.IDTo = q.IDPrefix.Range()
	}
	statuses := []string{""}
	if !q.FinishedFrom.IsZero() && len(q.Statuses) == 0 {
		// Only ended runs have a finish time; one status at a time lets
		// each read use the index on (status, finished_at).
		q.Statuses = []store.RunStatus{store.RunCompleted, store.RunFailed, store.RunCancelled}
	}
	if len(q.Statuses) > 0 {
		statuses = statuses[:0]
		for _, st := range q.Statuses {
			if !slices.Contains(statuses, string(st)) {
				statuses = append(statuses, string(st))
			}
		}
	}
	var read []dbsqlc.OpsRunsScanRow
	scan := func() error {
		read = read[:0]
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			qs := s.q.WithTx(tx)
			if err := qs.OpsCustomPlans(ctx); err != nil {
				return err
			}
			for _, st := range statuses {
				p.Status = st
				rows, err := qs.OpsRunsScan(ctx, p)
				if err != nil {
					return err
				}
				read = append(read, rows...)
			}
			return nil
		})
	}
	err := scan()
	if err != nil && len(q.InputContains) > 0 && isNotJSONB(err) {
		// An input among these runs cannot be read as jsonb (inputs are
		// stored as json): read them all with their inputs, and check the
		// documents here, as the memory store does, rather than fail the
		// listing for one odd run.
		p.InputContains, p.WithInput = documents(nil), true
		if err = scan(); err == nil {
			for i, r := range read {
				read[i].Matched.Bool = slices.ContainsFunc(q.InputContains, func(doc json.RawMessage) bool { return store.JSONContains(r.Input, doc) })
				if !q.WithInput || !read[i].Matched.Bool {
					read[i].Input = nil
				}
			}
		}
	}
	if err != nil {
		return nil, nil, wrap(err, "listing runs")
	}
	if len(statuses) > 1 {
		slices.SortFunc(read, func(a, b dbsqlc.OpsRunsScanRow) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return bytes.Compare(b.ID[:], a.ID[:])
		})
		read = read[:min(len(read), limit)]
	}
	var reached *store.RunCursor
	if len(read) == limit {
		reached = &store.RunCursor{CreatedAt: read[limit-1].CreatedAt, ID: read[limit-1].ID}
	}
	out := make([]store.Run, 0, len(read))
	var limited []bool
	for _, r := range read {
		if !r.Matched.Bool {
			continue
		}
		out = append(out, store.Run{
			ID: r.ID, Workflow: r.Workflow, Version: r.Version, Tenant: r.Tenant,
			IdempotencyKey: r.IdempotencyKey.String, Priority: int(r.Priority), Status: store.RunStatus(r.Status),
			Failure: failure(r.FailedStep, r.Error), CreatedAt: r.CreatedAt, FinishedAt: deref(r.FinishedAt),
			Input: r.Input, Parent: parentRun(r.ParentRunID, r.ParentStep, r.ParentIndex), RerunAt: deref(r.RerunAt), Tags: tagsFromDB(r.Tags),
			StartAt: deref(r.StartAt), Deadline: deref(r.Deadline),
		})
		limited = append(limited, r.Limited)
	}
	ptrs := make([]*store.Run, len(out))
	for i := range out {
		ptrs[i] = &out[i]
	}
	if err := fillWaiting(ctx, s.q, ptrs, limited); err != nil {
		return nil, nil, wrap(err, "listing runs")
	}
	return out, reached, nil
}

// storableText reports whether Postgres can hold each of ss as text:
// valid UTF-8 without NUL bytes.
func storableText(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return false
		}
	}
	return true
}

// isNotJSONB reports an input that json accepts and jsonb refuses: the
// escape \u0000 (22P05, untranslatable_character) or a number beyond
// numeric's range (22003, numeric_value_out_of_range).
func isNotJSONB(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "22P05" || pgErr.Code == "22003")
}

// documents passes JSON documents as jsonb[]: never nil, so that none is
// an empty array.
func documents(docs []json.RawMessage) [][]byte {
	out := make([][]byte, len(docs))
	for i, d := range docs {
		out[i] = d
	}
	return out
}

// ListWorkers implements store.Ops.
func (s *Store) ListWorkers(ctx context.Context) ([]store.Worker, error) {
	rows, err := s.q.OpsWorkers(ctx, leaderNameLock)
	if err != nil {
		return nil, wrap(err, "listing workers")
	}
	out := make([]store.Worker, len(rows))
	for i, r := range rows {
		out[i] = store.Worker{ID: r.Worker, HeartbeatAt: r.HeartbeatAt, Leases: int(r.Leases), Leader: r.Leader}
		if len(r.Versions) > 0 {
			out[i].Versions = r.Versions
		}
		if len(r.Labels) > 0 {
			out[i].Labels = r.Labels
		}
	}
	return out, nil
}

// QueueStats implements store.Ops.
func (s *Store) QueueStats(ctx context.Context) ([]store.QueueStat, error) {
	rows, err := s.q.OpsQueue(ctx)
	if err != nil {
		return nil, wrap(err, "reading the queue")
	}
	out := make([]store.QueueStat, len(rows))
	for i, r := range rows {
		out[i] = store.QueueStat{
			Tenant: r.Tenant, Workflow: r.Workflow, Queued: int(r.Queued), Running: int(r.Running), Held: int(r.Held),
			Paced:          int(r.Paced),
			OldestQueuedAt: deref(r.OldestQueuedAt),
		}
	}
	return out, nil
}

// QueueSteps implements store.Ops.
func (s *Store) QueueSteps(ctx context.Context, tenant, workflow string) ([]store.QueueStepStat, error) {
	rows, err := s.q.OpsQueueSteps(ctx, dbsqlc.OpsQueueStepsParams{Tenant: tenant, Workflow: workflow})
	if err != nil {
		return nil, wrap(err, "reading the queue of "+workflow)
	}
	out := make([]store.QueueStepStat, len(rows))
	for i, r := range rows {
		out[i] = store.QueueStepStat{Version: r.Version, Step: int(r.Step), Queued: int(r.Queued), Held: int(r.Held),
			Paced: int(r.Paced), OldestQueuedAt: r.OldestQueuedAt}
	}
	return out, nil
}

// QueueVersions implements store.Ops.
func (s *Store) QueueVersions(ctx context.Context) ([]store.QueueVersionStat, error) {
	rows, err := s.q.OpsQueueVersions(ctx)
	if err != nil {
		return nil, wrap(err, "reading the queue by version")
	}
	out := make([]store.QueueVersionStat, len(rows))
	for i, r := range rows {
		out[i] = store.QueueVersionStat{Workflow: r.Workflow, Version: r.Version, Queued: int(r.Queued), OldestQueuedAt: r.OldestQueuedAt}
	}
	return out, nil
}

// ListWorkflows implements store.Ops.
func (s *Store) ListWorkflows(ctx context.Context) ([]store.WorkflowVersion, error) {
	rows, err := s.q.OpsWorkflows(ctx)
	if err != nil {
		return nil, wrap(err, "listing workflows")
	}
	out := make([]store.WorkflowVersion, len(rows))
	for i, r := range rows {
		out[i] = store.WorkflowVersion{Version: r.Version, Name: r.Name, Spec: r.Spec, SavedAt: r.CreatedAt}
	}
	return out, nil
}

// InFlight implements store.Ops: the versions of the runs in progress,
// then their steps' tasks not ended, counted, and their specs, in one
// read-only transaction, so that the counts are of one instant.
func (s *Store) InFlight(ctx context.Context, limit int) ([]store.VersionInFlight, bool, error) {
	if limit <= 0 {
		limit = store.DefaultInFlightLimit
	}
	limit = min(limit, 1<<20)
	var out []store.VersionInFlight
	more := false
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		qs := s.q.WithTx(tx)
		rows, err := qs.OpsInFlightVersions(ctx, int32(limit+1))
		if err != nil {
			return err
		}
		if len(rows) > limit {
			rows, more = rows[:limit], true
		}
		out = make([]store.VersionInFlight, len(rows))
		byVersion := make(map[string]*store.VersionInFlight, len(rows))
		versions := make([]string, len(rows))
		for i, r := range rows {
			out[i] = store.VersionInFlight{Version: store.WorkflowVersion{Version: r.Version, Name: r.Workflow}, Runs: int(r.Runs)}
			byVersion[r.Version] = &out[i]
			versions[i] = r.Version
		}
		steps, err := qs.OpsInFlightSteps(ctx, versions)
		if err != nil {
			return err
		}
		for _, st := range steps {
			if v := byVersion[st.Version]; v != nil {
				v.Steps = append(v.Steps, store.StepInFlight{Step: int(st.Step), Runs: int(st.Runs)})
			}
		}
		specs, err := qs.OpsWorkflowsByVersion(ctx, versions)
		if err != nil {
			return err
		}
		for _, w := range specs {
			if v := byVersion[w.Version]; v != nil {
				v.Version.Spec, v.Version.SavedAt = w.Spec, w.CreatedAt
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, wrap(err, "reading the runs in progress")
	}
	return out, more, nil
}

// RunActivity implements store.Ops: three index range reads (runs created
// in the window, runs finished in it, runs running) in one read-only
// transaction, so that the counts are of one instant.
func (s *Store) RunActivity(ctx context.Context, q store.ActivityQuery) (store.Activity, error) {
	a := store.NewActivity(q)
	if q.Buckets <= 0 || q.Bucket <= 0 {
		return a, nil
	}
	window := q.To()
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		qs := s.q.WithTx(tx)
		created, err := qs.OpsActivityCreated(ctx, dbsqlc.OpsActivityCreatedParams{
			WindowFrom: q.From, WindowTo: window, BucketUs: q.Bucket.Microseconds(),
		})
		if err != nil {
			return err
		}
		for _, r := range created {
			if i := int(r.Bucket); i >= 0 && i < len(a.Buckets) {
				a.Buckets[i].Created += int(r.Runs)
			}
		}
		finished, err := qs.OpsActivityFinished(ctx, dbsqlc.OpsActivityFinishedParams{
			WindowFrom: q.From, WindowTo: window, BucketUs: q.Bucket.Microseconds(),
		})
		if err != nil {
			return err
		}
		for _, r := range finished {
			if i := int(r.Bucket); i >= 0 && i < len(a.Buckets) {
				a.Buckets[i].AddFinished(store.RunStatus(r.Status), int(r.Runs))
			}
		}
		running, err := qs.OpsRunningRuns(ctx)
		a.Running = int(running)
		return err
	})
	if err != nil {
		return store.Activity{}, wrap(err, "counting run activity")
	}
	return a, nil
}

// EventCounts implements store.Ops.
func (s *Store) EventCounts(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]int, error) {
	out := make(map[uuid.UUID]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q.OpsEventCounts(ctx, ids)
	if err != nil {
		return nil, wrap(err, "counting events")
	}
	for _, r := range rows {
		out[r.RunID] = int(r.Events)
	}
	return out, nil
}

// ChildRunCounts implements store.Ops.
func (s *Store) ChildRunCounts(ctx context.Context, run uuid.UUID) ([]store.ChildRunCount, error) {
	rows, err := s.q.OpsChildRunCounts(ctx, run)
	if err != nil {
		return nil, wrap(err, "counting child runs")
	}
	out := make([]store.ChildRunCount, len(rows))
	for i, r := range rows {
		out[i] = store.ChildRunCount{Step: int(r.Step), Status: store.RunStatus(r.Status), Runs: int(r.Runs)}
	}
	return out, nil
}

// ChildRunPreviews implements store.Ops: one statement counts, another
// reads the first runs of every parent, in one snapshot.
func (s *Store) ChildRunPreviews(ctx context.Context, parents []uuid.UUID, first int) ([]store.ChildRunPreview, error) {
	if len(parents) == 0 {
		return nil, nil
	}
	var (
		totals []dbsqlc.OpsChildRunTotalsRow
		runs   []dbsqlc.OpsFirstChildRunsRow
	)
	snapshot := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		var err error
		if totals, err = q.OpsChildRunTotals(ctx, parents); err != nil || len(totals) == 0 || first <= 0 {
			return err
		}
		runs, err = q.OpsFirstChildRuns(ctx, dbsqlc.OpsFirstChildRunsParams{Parents: parents, Lim: int32(min(first, 1<<20))})
		return err
	})
	if err != nil {
		return nil, wrap(err, "previewing child runs")
	}
	byParent := map[uuid.UUID]*store.ChildRunPreview{}
	for _, t := range totals {
		p := byParent[t.Parent]
		if p == nil {
			p = &store.ChildRunPreview{Parent: t.Parent, Counts: map[store.RunStatus]int{}}
			byParent[t.Parent] = p
		}
		p.Counts[store.RunStatus(t.Status)] += int(t.Runs)
	}
	for _, r := range runs {
		p := byParent[uuid.UUID(r.ParentRunID.Bytes)]
		if p == nil { // started after the counts were read: not in this snapshot
			continue
		}
		p.First = append(p.First, store.Run{
			ID: r.ID, Workflow: r.Workflow, Version: r.Version, Tenant: r.Tenant,
			IdempotencyKey: r.IdempotencyKey.String, Priority: int(r.Priority), Status: store.RunStatus(r.Status),
			Failure: failure(r.FailedStep, r.Error), CreatedAt: r.CreatedAt, FinishedAt: deref(r.FinishedAt),
			Parent: parentRun(r.ParentRunID, r.ParentStep, r.ParentIndex), RerunAt: deref(r.RerunAt), Tags: tagsFromDB(r.Tags),
			StartAt: deref(r.StartAt), Deadline: deref(r.Deadline),
		})
	}
	var out []store.ChildRunPreview
	for _, id := range parents {
		if p := byParent[id]; p != nil {
			out = append(out, *p)
			delete(byParent, id) // a parent given twice is previewed once
		}
	}
	return out, nil
}

// Unserved implements store.Ops.
func (s *Store) Unserved(ctx context.Context, q store.UnservedQuery) ([]store.Unserved, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.q.OpsUnserved(ctx, dbsqlc.OpsUnservedParams{AliveSince: q.AliveSince, Lim: int32(min(q.Limit, 1<<20))})
	if err != nil {
		return nil, wrap(err, "listing unserved work")
	}
	out := make([]store.Unserved, len(rows))
	for i, r := range rows {
		out[i] = store.Unserved{Workflow: r.Workflow, Labels: r.Labels, Tasks: int(r.Tasks), OldestQueuedAt: r.OldestQueuedAt}
	}
	return out, nil
}
