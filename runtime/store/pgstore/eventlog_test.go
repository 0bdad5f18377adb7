package pgstore_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// The compact event log (schema/0026): a task's first QUEUED, STARTED and
// COMPLETED events are slots of its row, and every other event a row of
// trellis_events. These tests drive one run through the same calls on
// the memory store, which keeps its log as a list, and on Postgres, and
// require the two logs to agree event for event (step, type, attempt,
// time, detail), and Postgres to have written as rows exactly the events
// no slot could take.

// logScript is a chain a -> b -> c (b not plain, so its STARTED events
// are StartTasks's) that meets every path into the log: a retried
// attempt, a task recovered from a worker that died, a child handed off,
// and a rerun of the completed run from b. It returns the run.
func logScript(t *testing.T, s store.Store) uuid.UUID {
	t.Helper()
	ctx := t.Context()
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	tick := func() time.Time { now = now.Add(time.Second); return now }
	id := uuid.Must(uuid.NewV7())
	_, err := s.CreateRuns(ctx, store.CreateRuns{Now: now, Runs: []store.NewRun{{
		ID: id, Workflow: "chain", Version: "chain@v1", Tenant: "default", Input: []byte(`{}`),
		Tasks: []store.NewTask{
			{Step: 0, Kind: store.KindCode, Plain: true, MaxAttempts: 3},
			{Step: 1, Kind: store.KindCode, Parents: []int{0}, Pending: 1, Plain: false, MaxAttempts: 3},
			{Step: 2, Kind: store.KindCode, Parents: []int{1}, Pending: 1, Plain: true, MaxAttempts: 3},
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	claim := func(worker string, step int) store.Attempt {
		t.Helper()
		cs, err := s.ClaimTasks(ctx, store.Claim{Worker: worker, Limit: 10, Now: tick()})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].Key.Step != step {
			t.Fatalf("claimed %+v, want step %d", cs, step)
		}
		a := store.Attempt{Key: cs[0].Key, Attempt: cs[0].Attempt}
		if !cs[0].Plain {
			if err := s.StartTasks(ctx, []store.Attempt{a}, tick()); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	finish := func(r store.Results) store.FinishResult {
		t.Helper()
		r.Now = tick()
		res, err := s.Finish(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	complete := func(a store.Attempt, children []int, handOff int) store.FinishResult {
		t.Helper()
		return finish(store.Results{
			Completions: []store.Completion{{Attempt: a, Output: []byte(`{}`), Children: children}},
			HandOff:     store.HandOff{Worker: "w1", Limit: handOff},
		})
	}
	handed := func(res store.FinishResult, step int) store.Attempt {
		t.Helper()
		if len(res.HandedOff) != 1 || res.HandedOff[0].Key.Step != step {
			t.Fatalf("handed off %+v, want step %d", res.HandedOff, step)
		}
		return store.Attempt{Key: res.HandedOff[0].Key, Attempt: res.HandedOff[0].Attempt}
	}

	// a: its first attempt fails and is retried; the second completes.
	a := claim("w1", 0)
	finish(store.Results{Retries: []store.Retry{{Attempt: a, Error: "boom", At: now.Add(2 * time.Second)}}})
	if fired, err := s.FireTimers(ctx, tick().Add(time.Second), 10); err != nil || len(fired) != 1 {
		t.Fatalf("FireTimers = %v, %v; want a's retry", fired, err)
	}
	a = claim("w1", 0)
	complete(a, []int{1}, 0)
	// b: its worker dies; recovered, it runs again and hands c off.
	claim("dead", 1)
	rec, err := s.RecoverTasks(ctx, store.Recover{StaleBefore: tick(), Limit: 10, Now: tick()})
	if err != nil || len(rec.Requeued) != 1 {
		t.Fatalf("RecoverTasks = %+v, %v; want b requeued", rec, err)
	}
	b := claim("w1", 1)
	c := handed(complete(b, []int{2}, 1), 2)
	complete(c, nil, 0)
	// The rerun from b: every event of b and c now finds its slot taken.
	if _, err := s.RetryRuns(ctx, store.RetryRuns{Now: tick(), Runs: []store.RetryRun{{
		Run: id, From: "b", Reset: []store.ResetTask{{Step: 1, Pending: 0}, {Step: 2, Pending: 1}},
	}}}); err != nil {
		t.Fatal(err)
	}
	b = claim("w1", 1)
	c = handed(complete(b, []int{2}, 1), 2)
	complete(c, nil, 0)
	if r, err := s.GetRun(ctx, id); err != nil || r.Status != store.RunCompleted {
		t.Fatalf("GetRun = %+v, %v; want COMPLETED", r, err)
	}
	return id
}

// logLines renders a log without its ids, which only Postgres has.
func logLines(evs []store.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%d %s attempt %d at %s %q", e.StepIndex, e.Type, e.Attempt, e.At.UTC().Format(time.TimeOnly), e.Detail)
	}
	return out
}

// eventRows returns the rows trellis_events holds for a run, in order.
func eventRows(t *testing.T, pool *pgxpool.Pool, run uuid.UUID) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT step || ' ' || type || ' attempt ' || attempt FROM trellis_events WHERE run_id = $1 ORDER BY id`, run)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEventLogSlotsAgreeWithTheMemoryStore(t *testing.T) {
	ctx := t.Context()
	mem := memstore.New()
	want, err := mem.ListEvents(ctx, logScript(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	pool := pgtest.Pool(t)
	pg := pgstore.New(pool)
	id := logScript(t, pg)
	got, err := pg.ListEvents(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := logLines(got), logLines(want); !slices.Equal(g, w) {
		t.Errorf("Postgres's log:\n%s\nthe memory store's:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	for i := 1; i < len(got); i++ {
		if got[i].ID <= got[i-1].ID {
			t.Errorf("event %d has id %d after %d: ids out of order", i, got[i].ID, got[i-1].ID)
		}
	}

	// The rows: every event but each task's first QUEUED, STARTED and
	// COMPLETED, in the log's order.
	wantRows := []string{
		"0 RETRYING attempt 1", "0 QUEUED attempt 1", "0 STARTED attempt 2",
		"1 RETRYING attempt 1", "1 QUEUED attempt 1", "1 STARTED attempt 2",
		"1 QUEUED attempt 2", "1 STARTED attempt 3", "1 COMPLETED attempt 3",
		"2 QUEUED attempt 1", "2 STARTED attempt 2", "2 COMPLETED attempt 2",
	}
	if rows := eventRows(t, pool, id); !slices.Equal(rows, wantRows) {
		t.Errorf("trellis_events holds\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
	var slots int
	if err := pool.QueryRow(ctx, `SELECT count(log_queued) + count(log_started) + count(log_completed) FROM trellis_tasks WHERE run_id = $1`,
		id).Scan(&slots); err != nil {
		t.Fatal(err)
	}
	if slots+len(wantRows) != len(got) || slots != 9 {
		t.Errorf("%d slots filled and %d rows for %d events; want 9 slots", slots, len(wantRows), len(got))
	}
	if n, err := pg.EventCounts(ctx, []uuid.UUID{id}); err != nil || n[id] != len(got) {
		t.Errorf("EventCounts = %v, %v; want %d", n, err, len(got))
	}
}

// A run whose tasks never retry writes no event row at all, and the
// events one statement writes for several children keep the order they
// had as rows: the QUEUED of those queued, then the QUEUED of those handed
// off, then their STARTED.
func TestEventLogOfAnOrdinaryRunIsAllSlots(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	s := pgstore.New(pool)
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	id := uuid.Must(uuid.NewV7())
	// a -> (b, c, d) -> e; d may be skipped, so it is never handed off.
	_, err := s.CreateRuns(ctx, store.CreateRuns{Now: now, Runs: []store.NewRun{{
		ID: id, Workflow: "fan", Version: "fan@v1", Tenant: "default", Input: []byte(`{}`),
		Tasks: []store.NewTask{
			{Step: 0, Kind: store.KindCode, Plain: true, MaxAttempts: 1},
			{Step: 1, Kind: store.KindCode, Parents: []int{0}, Pending: 1, Plain: true, MaxAttempts: 1},
			{Step: 2, Kind: store.KindCode, Parents: []int{0}, Pending: 1, Plain: true, MaxAttempts: 1},
			{Step: 3, Kind: store.KindCode, Parents: []int{0}, Pending: 1, Plain: false, MaxAttempts: 1},
			{Step: 4, Kind: store.KindCode, Parents: []int{1, 2, 3}, Pending: 3, Plain: true, MaxAttempts: 1},
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	at := func(d int) time.Time { return now.Add(time.Duration(d) * time.Second) }
	cs, err := s.ClaimTasks(ctx, store.Claim{Worker: "w1", Limit: 10, Now: at(1)})
	if err != nil || len(cs) != 1 {
		t.Fatalf("ClaimTasks = %+v, %v", cs, err)
	}
	attempt := func(c store.ClaimedTask) store.Attempt { return store.Attempt{Key: c.Key, Attempt: c.Attempt} }
	res, err := s.Finish(ctx, store.Results{Now: at(2), HandOff: store.HandOff{Worker: "w1", Limit: 5},
		Completions: []store.Completion{{Attempt: attempt(cs[0]), Output: []byte(`{}`), Children: []int{1, 2, 3}}}})
	if err != nil || len(res.HandedOff) != 2 {
		t.Fatalf("Finish = %+v, %v; want b and c handed off", res, err)
	}
	d, err := s.ClaimTasks(ctx, store.Claim{Worker: "w1", Limit: 10, Now: at(3)})
	if err != nil || len(d) != 1 {
		t.Fatalf("ClaimTasks = %+v, %v; want d", d, err)
	}
	if err := s.StartTasks(ctx, []store.Attempt{attempt(d[0])}, at(4)); err != nil {
		t.Fatal(err)
	}
	var done []store.Completion
	for _, c := range append(res.HandedOff, d...) {
		done = append(done, store.Completion{Attempt: attempt(c), Output: []byte(`{}`), Children: []int{4}})
	}
	res, err = s.Finish(ctx, store.Results{Now: at(5), HandOff: store.HandOff{Worker: "w1", Limit: 5}, Completions: done})
	if err != nil || len(res.HandedOff) != 1 {
		t.Fatalf("Finish = %+v, %v; want e handed off", res, err)
	}
	if _, err := s.Finish(ctx, store.Results{Now: at(6),
		Completions: []store.Completion{{Attempt: attempt(res.HandedOff[0]), Output: []byte(`{}`)}}}); err != nil {
		t.Fatal(err)
	}

	evs, err := s.ListEvents(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`0 QUEUED attempt 0 at 12:00:00 ""`, `0 STARTED attempt 1 at 12:00:01 ""`, `0 COMPLETED attempt 1 at 12:00:02 ""`,
		`3 QUEUED attempt 0 at 12:00:02 ""`,
		`1 QUEUED attempt 0 at 12:00:02 ""`, `2 QUEUED attempt 0 at 12:00:02 ""`,
		`1 STARTED attempt 1 at 12:00:02 ""`, `2 STARTED attempt 1 at 12:00:02 ""`,
		`3 STARTED attempt 1 at 12:00:04 ""`,
		`1 COMPLETED attempt 1 at 12:00:05 ""`, `2 COMPLETED attempt 1 at 12:00:05 ""`, `3 COMPLETED attempt 1 at 12:00:05 ""`,
		`4 QUEUED attempt 0 at 12:00:05 ""`, `4 STARTED attempt 1 at 12:00:05 ""`, `4 COMPLETED attempt 1 at 12:00:06 ""`,
	}
	// The completions of one statement are written in no set order.
	got := logLines(evs)
	slices.Sort(got[9:12])
	if !slices.Equal(got, want) {
		t.Errorf("the log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rows := eventRows(t, pool, id); len(rows) != 0 {
		t.Errorf("trellis_events holds %v for a run without retries; want no row", rows)
	}
}

// A run in flight across schema/0026 keeps the rows it had, and its
// later events fill the empty slots, after them in the log.
func TestEventLogOfARunAcrossTheMigration(t *testing.T) {
	ctx := t.Context()
	pool, err := pgstore.Connect(ctx, pgtest.EmptySchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pgstore.MigrateTo(ctx, pool, 25); err != nil {
		t.Fatal(err)
	}
	// As version 25 wrote it: a chain 0 -> 1 -> 2 (2 its sink) with 0
	// completed and 1 queued.
	id := uuid.Must(uuid.NewV7())
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, q := range []string{
		`INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved_sinks, created_at)
		 VALUES ($1, 'w', 'w@1', 't', 'RUNNING', '{}', 1, $2)`,
		`INSERT INTO trellis_tasks (run_id, step, kind, status, parents, pending, plain, max_attempts, attempt, output, sink, updated_at) VALUES
		 ($1, 0, 0, 'COMPLETED', '{}', 0, true, 1, 1, '{}', false, $2::timestamptz + interval '2 seconds'),
		 ($1, 1, 0, 'QUEUED', '{0}', 0, true, 1, 0, NULL, false, $2::timestamptz + interval '2 seconds'),
		 ($1, 2, 0, 'PENDING', '{1}', 1, true, 1, 0, NULL, true, $2)`,
		`INSERT INTO trellis_events (run_id, step, type, attempt, at) VALUES
		 ($1, 0, 'QUEUED', 0, $2), ($1, 0, 'STARTED', 1, $2::timestamptz + interval '1 second'),
		 ($1, 0, 'COMPLETED', 1, $2::timestamptz + interval '2 seconds'), ($1, 1, 'QUEUED', 0, $2::timestamptz + interval '2 seconds')`,
	} {
		if _, err := pool.Exec(ctx, q, id, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// Its queue entry, as the current functions write it.
	if _, err := pool.Exec(ctx, `SELECT trellis_enqueue(ARRAY[$1::uuid], ARRAY[1]::smallint[], ARRAY[false], ARRAY['t'], ARRAY['w'],
		ARRAY[trellis_lane(2::smallint, true)])`, id); err != nil {
		t.Fatal(err)
	}
	s := pgstore.New(pool)
	children := map[int][]int{1: {2}}
	for i := 3; ; i++ {
		cs, err := s.ClaimTasks(ctx, store.Claim{Worker: "w1", Limit: 10, Now: t0.Add(time.Duration(i) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			break
		}
		if _, err := s.Finish(ctx, store.Results{Now: t0.Add(time.Duration(i)*time.Second + 500*time.Millisecond),
			Completions: []store.Completion{{Attempt: store.Attempt{Key: cs[0].Key, Attempt: cs[0].Attempt},
				Output: []byte(`{}`), Children: children[cs[0].Key.Step]}}}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.ListEvents(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`0 QUEUED attempt 0 at 12:00:00 ""`, `0 STARTED attempt 1 at 12:00:01 ""`, `0 COMPLETED attempt 1 at 12:00:02 ""`,
		`1 QUEUED attempt 0 at 12:00:02 ""`, `1 STARTED attempt 1 at 12:00:03 ""`, `1 COMPLETED attempt 1 at 12:00:03 ""`,
		`2 QUEUED attempt 0 at 12:00:03 ""`, `2 STARTED attempt 1 at 12:00:04 ""`, `2 COMPLETED attempt 1 at 12:00:04 ""`,
	}
	if got := logLines(evs); !slices.Equal(got, want) {
		t.Errorf("the log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rows := eventRows(t, pool, id); len(rows) != 4 {
		t.Errorf("trellis_events holds %v; want the four rows written before the migration", rows)
	}
	if r, err := s.GetRun(ctx, id); err != nil || r.Status != store.RunCompleted {
		t.Errorf("GetRun = %+v, %v; want COMPLETED", r, err)
	}
}
