package pgstore_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/schema/spec"
)

// fillRuns inserts n runs in one statement, as a busy installation might
// hold them: created over 30 days up to now (about one every 2.6s for a
// million), 20 workflows (and "rare", one run in 10,000), 1,000 tenants,
// 97% COMPLETED, 2% FAILED, 0.5% CANCELLED and 0.5% RUNNING (workflow,
// tenant and status independent of each other), half with an idempotency
// key (key-<i>), random ids, and with $3 an input such as {"customerId":
// "customer-4242", "amountCents": 1234, "tier": "standard", "express":
// false} (100,000 customers, a tenth of the runs gold, a third express),
// else {}. Only trellis_runs: listing reads nothing else.
const fillRuns = `
INSERT INTO trellis_runs (id, workflow, version, tenant, idempotency_key, status, input, unresolved_sinks,
                          failed_step, error, created_at, finished_at)
SELECT gen_random_uuid(),
       CASE WHEN i % 10000 = 0 THEN 'rare' ELSE 'workflow-' || ((i / 7) % 20) END,
       'v1', 'tenant-' || ((i * 7919) % 1000),
       CASE WHEN i % 2 = 0 THEN 'key-' || i END,
       s.status,
       CASE WHEN $3::boolean THEN
           json_build_object('customerId', 'customer-' || ((i * 104729) % 100000), 'amountCents', (i * 7919) % 100000,
                             'tier', CASE WHEN i % 10 = 3 THEN 'gold' ELSE 'standard' END, 'express', i % 3 = 0)
       ELSE '{}' END,
       0,
       CASE WHEN s.status = 'FAILED' THEN 1 ELSE -1 END,
       CASE WHEN s.status = 'FAILED' THEN 'boom' END,
       c.at,
       CASE WHEN s.status <> 'RUNNING' THEN c.at + interval '2 seconds' END
FROM generate_series(1, $1::bigint) AS i
CROSS JOIN LATERAL (SELECT $2::timestamptz - (($1::bigint - i) * (interval '30 days' / $1::int)) AS at) c
CROSS JOIN LATERAL (SELECT CASE
    WHEN (i * 31) % 997 < 20 THEN 'FAILED'
    WHEN (i * 31) % 997 < 25 THEN 'CANCELLED'
    WHEN (i * 31) % 997 < 30 THEN 'RUNNING'
    ELSE 'COMPLETED' END AS status) s`

// listCase is one listing to time.
type listCase struct {
	name string
	q    func(now time.Time) store.RunQuery
}

func statuses(ss ...store.RunStatus) []store.RunStatus { return ss }

// listCases are the listings of trellis runs list, one per filter and a few
// combined, each a page of 51 (the CLI's 50, and one to see if more
// follow).
var listCases = []listCase{
	{"none", func(time.Time) store.RunQuery { return store.RunQuery{} }},
	{"workflow", func(time.Time) store.RunQuery { return store.RunQuery{Workflow: "workflow-7"} }},
	{"workflow-rare", func(time.Time) store.RunQuery { return store.RunQuery{Workflow: "rare"} }},
	{"tenant", func(time.Time) store.RunQuery { return store.RunQuery{Tenant: "tenant-42"} }},
	{"status-failed", func(time.Time) store.RunQuery {
		return store.RunQuery{Statuses: statuses(store.RunFailed)}
	}},
	{"status-running", func(time.Time) store.RunQuery {
		return store.RunQuery{Statuses: statuses(store.RunRunning)}
	}},
	{"status-completed", func(time.Time) store.RunQuery {
		return store.RunQuery{Statuses: statuses(store.RunCompleted)}
	}},
	{"status-failed,cancelled", func(time.Time) store.RunQuery {
		return store.RunQuery{Statuses: statuses(store.RunFailed, store.RunCancelled)}
	}},
	{"idempotency-key", func(time.Time) store.RunQuery { return store.RunQuery{IdempotencyKey: "key-5000"} }},
	{"id-prefix", func(time.Time) store.RunQuery { return store.RunQuery{IDPrefix: idPrefix("abcd0123")} }},
	{"id-prefix-long", func(time.Time) store.RunQuery { return store.RunQuery{IDPrefix: idPrefix("abcd0123-4567")} }},
	{"id-prefix+tenant", func(time.Time) store.RunQuery {
		return store.RunQuery{IDPrefix: idPrefix("abcd0123"), Tenant: "tenant-42"}
	}},
	{"idempotency-key+tenant", func(time.Time) store.RunQuery {
		return store.RunQuery{IdempotencyKey: "key-5000", Tenant: "tenant-42"}
	}},
	{"since-24h", func(now time.Time) store.RunQuery {
		return store.RunQuery{CreatedFrom: now.Add(-24 * time.Hour)}
	}},
	{"range-a-day-a-week-ago", func(now time.Time) store.RunQuery {
		return store.RunQuery{CreatedFrom: now.Add(-8 * 24 * time.Hour), CreatedTo: now.Add(-7 * 24 * time.Hour)}
	}},
	{"workflow+failed", func(time.Time) store.RunQuery {
		return store.RunQuery{Workflow: "workflow-7", Statuses: statuses(store.RunFailed)}
	}},
	{"tenant+failed", func(time.Time) store.RunQuery {
		return store.RunQuery{Tenant: "tenant-42", Statuses: statuses(store.RunFailed)}
	}},
	{"page-15-days-deep", func(now time.Time) store.RunQuery {
		return store.RunQuery{After: &store.RunCursor{CreatedAt: now.Add(-15 * 24 * time.Hour)}}
	}},
}

// idPrefix parses a run id prefix of a listing case.
func idPrefix(s string) store.RunIDPrefix {
	p, err := store.ParseRunIDPrefix(s)
	if err != nil {
		panic(err)
	}
	return p
}

// listingQueries records the listing statements a pool runs, with their
// arguments, so that they can be EXPLAINed exactly as ListRuns sent them.
type listingQueries struct {
	// name is the sqlc name of the statements recorded; OpsRunsScan when
	// empty.
	name string
	mu   sync.Mutex
	got  []tracedQuery
}

type tracedQuery struct {
	sql  string
	args []any
}

func (l *listingQueries) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	name := l.name
	if name == "" {
		name = "OpsRunsScan"
	}
	if strings.Contains(d.SQL, "-- name: "+name+" ") {
		l.mu.Lock()
		l.got = append(l.got, tracedQuery{d.SQL, d.Args})
		l.mu.Unlock()
	}
	return ctx
}

func (*listingQueries) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (l *listingQueries) take() []tracedQuery {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.got
	l.got = nil
	return out
}

// listingFixture is a schema filled with n runs, and a store on a pool
// whose listing statements are recorded.
type listingFixture struct {
	store  *pgstore.Store
	pool   *pgxpool.Pool
	traced *listingQueries
	now    time.Time
}

// newListingFixture fills a schema with n runs, with inputs or with {}.
func newListingFixture(tb testing.TB, n int, inputs bool) *listingFixture {
	tb.Helper()
	ctx := context.Background()
	traced := &listingQueries{}
	pool := tracedPool(tb, traced)
	now := time.Now().UTC().Truncate(time.Second)
	start := time.Now()
	if _, err := pool.Exec(ctx, fillRuns, n, now, inputs); err != nil {
		tb.Fatalf("filling: %v", err)
	}
	filled := time.Since(start)
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) trellis_runs`); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("%d runs inserted, indexes included, in %v; vacuumed and analyzed in %v", n, filled.Round(time.Millisecond), (time.Since(start) - filled).Round(time.Millisecond))
	return &listingFixture{store: pgstore.New(pool), pool: pool, traced: traced, now: now}
}

// list runs one case's listing and returns its rows.
func (f *listingFixture) list(tb testing.TB, c listCase) []store.Run {
	q := c.q(f.now)
	q.Limit = 51
	runs, err := f.store.ListRuns(context.Background(), q)
	if err != nil {
		tb.Fatalf("%s: %v", c.name, err)
	}
	return runs
}

// explain runs the statements of one case's listing again under EXPLAIN
// (ANALYZE, BUFFERS), planned as ListRuns plans them, and returns the
// plans.
func (f *listingFixture) explain(tb testing.TB, c listCase) []string {
	tb.Helper()
	f.traced.take()
	f.list(tb, c)
	var plans []string
	for _, q := range f.traced.take() {
		err := pgx.BeginFunc(context.Background(), f.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(context.Background(), `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`); err != nil {
				return err
			}
			rows, err := tx.Query(context.Background(), "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+q.sql, q.args...)
			if err != nil {
				return err
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			plans = append(plans, strings.Join(lines, "\n"))
			return err
		})
		if err != nil {
			tb.Fatalf("%s: explaining: %v", c.name, err)
		}
	}
	if len(plans) == 0 {
		tb.Fatalf("%s: no listing statement seen", c.name)
	}
	return plans
}

var (
	planIndex   = regexp.MustCompile(`(?:Index (?:Only )?Scan(?: Backward)? using|Bitmap Index Scan on) (\w+)`)
	planBuffers = regexp.MustCompile(`Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?`)
)

// summary is a plan's scans, and the pages its top node touched.
func summary(plan string) (scans []string, seq bool, sorts bool, pages int) {
	for _, m := range planIndex.FindAllStringSubmatch(plan, -1) {
		scans = append(scans, m[1])
	}
	if m := planBuffers.FindStringSubmatch(plan); m != nil {
		hit, _ := strconv.Atoi(m[1])
		read, _ := strconv.Atoi(m[2])
		pages = hit + read
	}
	return scans, strings.Contains(plan, "Seq Scan"), strings.Contains(plan, "Sort"), pages
}

// TestListRunsUsesIndexes checks the plans of the listings each index of
// schema/0005 is there for: they read that index, and never the whole
// table. (Where the index finds few rows, the planner may fetch them all
// and sort them rather than read them in order: as cheap.)
func TestListRunsUsesIndexes(t *testing.T) {
	f := newListingFixture(t, 50_000, false)
	want := map[string]string{
		"none":                   "trellis_runs_created",
		"workflow":               "trellis_runs_workflow_created",
		"workflow-rare":          "trellis_runs_workflow_created",
		"tenant":                 "trellis_runs_tenant_created",
		"status-failed":          "trellis_runs_status_created",
		"status-running":         "trellis_runs_status_created",
		"idempotency-key":        "trellis_runs_idempotency_key",
		"id-prefix":              "trellis_runs_pkey",
		"id-prefix-long":         "trellis_runs_pkey",
		"id-prefix+tenant":       "trellis_runs_pkey",
		"idempotency-key+tenant": "trellis_runs_idempotency_key",
		"since-24h":              "trellis_runs_created",
		"page-15-days-deep":      "trellis_runs_created",
	}
	for _, c := range listCases {
		index, ok := want[c.name]
		if !ok {
			continue
		}
		for _, plan := range f.explain(t, c) {
			scans, seq, _, _ := summary(plan)
			if len(scans) != 1 || scans[0] != index || seq {
				t.Errorf("%s: want one scan, of %s; the plan:\n%s", c.name, index, plan)
			}
		}
	}
}

// TestTopLevelListingUsesItsIndex: a listing of the runs no step started
// (the dashboard's runs list) reads the partial index of schema/0016 in
// order, not the index of every run past the child runs between two
// top-level ones, here nine in ten runs.
func TestTopLevelListingUsesItsIndex(t *testing.T) {
	f := newListingFixture(t, 20_000, false)
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `UPDATE trellis_runs SET parent_run_id = id, parent_step = 0, parent_index = 0 WHERE get_byte(uuid_send(id), 15) % 10 <> 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `VACUUM (ANALYZE) trellis_runs`); err != nil {
		t.Fatal(err)
	}
	c := listCase{"top-level", func(time.Time) store.RunQuery { return store.RunQuery{TopLevel: true} }}
	runs := f.list(t, c)
	if len(runs) != 51 {
		t.Fatalf("listed %d runs, want a page of 51", len(runs))
	}
	for _, r := range runs {
		if r.Parent != nil {
			t.Fatalf("run %s has a parent, yet was listed as top-level", r.ID)
		}
	}
	for _, plan := range f.explain(t, c) {
		if scans, seq, _, _ := summary(plan); len(scans) != 1 || scans[0] != "trellis_runs_top_level_created" || seq {
			t.Errorf("want one scan, of trellis_runs_top_level_created; the plan:\n%s", plan)
		}
	}
}

// BenchmarkChildRunPreviews times what the dashboard's runs list reads
// beneath a page of top-level runs: a count by status of each run's child
// runs and the first five of them, for a page of 51 runs of which
// TRELLIS_BENCH_PARENTS (default 5) started 10,000 runs each.
//
//	go test -run '^$' -bench ChildRunPreviews -benchtime 50x ./runtime/store/pgstore/
func BenchmarkChildRunPreviews(b *testing.B) {
	parents := 5
	if v := os.Getenv("TRELLIS_BENCH_PARENTS"); v != "" {
		var err error
		if parents, err = strconv.Atoi(v); err != nil || parents <= 0 || parents > 51 {
			b.Fatalf("TRELLIS_BENCH_PARENTS=%q: want 1 to 51", v)
		}
	}
	const children = 10_000
	f := newListingFixture(b, 51+parents*children, false)
	ctx := context.Background()
	// The newest 51 runs are the page; the first parents of them started
	// the older runs, 10,000 each.
	if _, err := f.pool.Exec(ctx, `
WITH page AS (SELECT id, row_number() OVER (ORDER BY created_at DESC, id DESC) AS n FROM trellis_runs ORDER BY created_at DESC, id DESC LIMIT 51),
     kids AS (SELECT id, row_number() OVER (ORDER BY created_at, id) - 1 AS k FROM trellis_runs WHERE id NOT IN (SELECT id FROM page))
UPDATE trellis_runs r SET parent_run_id = p.id, parent_step = 0, parent_index = (kids.k % $1)::int
FROM kids JOIN page p ON p.n = kids.k / $1 + 1
WHERE r.id = kids.id`, children); err != nil {
		b.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `VACUUM (ANALYZE) trellis_runs`); err != nil {
		b.Fatal(err)
	}
	page, err := f.store.ListRuns(ctx, store.RunQuery{TopLevel: true, Limit: 51})
	if err != nil || len(page) != 51 {
		b.Fatalf("the page: %d runs, %v", len(page), err)
	}
	ids := make([]uuid.UUID, len(page))
	for i, r := range page {
		ids[i] = r.ID
	}
	if os.Getenv("TRELLIS_BENCH_EXPLAIN") == "1" {
		for _, q := range []string{
			`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT parent_run_id, status, count(*) FROM trellis_runs WHERE parent_run_id = ANY ($1::uuid[]) GROUP BY parent_run_id, status`,
		} {
			rows, err := f.pool.Query(ctx, q, ids)
			if err != nil {
				b.Fatal(err)
			}
			lines, _ := pgx.CollectRows(rows, pgx.RowTo[string])
			b.Log("\n" + strings.Join(lines, "\n"))
		}
	}
	b.ResetTimer()
	var got []store.ChildRunPreview
	for range b.N {
		if got, err = f.store.ChildRunPreviews(ctx, ids, 5); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if len(got) != parents || got[0].Total() != children || len(got[0].First) != 5 {
		b.Fatalf("previews of %d parents, the first %d runs, %d shown", len(got), got[0].Total(), len(got[0].First))
	}
}

// BenchmarkListRuns times one page of trellis runs list (51 runs) per
// filter, on a table of TRELLIS_BENCH_RUNS runs (default 100,000; the
// docs/performance.md's figures are for 1,000,000), and reports the pages (8 KiB)
// each listing touched, which does not depend on the machine. Run with
// -v to see each plan's index; TRELLIS_BENCH_EXPLAIN=1 prints the plans.
//
//	TRELLIS_BENCH_RUNS=1000000 go test -run '^$' -bench ListRuns -benchtime 200x ./runtime/store/pgstore/
func BenchmarkListRuns(b *testing.B) {
	n := 100_000
	if v := os.Getenv("TRELLIS_BENCH_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("TRELLIS_BENCH_RUNS=%q: want a positive number", v)
		}
	}
	f := newListingFixture(b, n, false)
	for _, c := range listCases {
		pages := 0
		for _, plan := range f.explain(b, c) {
			scans, seq, sorts, p := summary(plan)
			pages += p
			b.Logf("%s: scans %v, seq scan %v, sort %v, %d pages", c.name, scans, seq, sorts, p)
			if os.Getenv("TRELLIS_BENCH_EXPLAIN") == "1" {
				b.Log("\n" + plan)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			rows := 0
			for range b.N {
				rows = len(f.list(b, c))
			}
			b.ReportMetric(float64(pages), "pages/op")
			b.ReportMetric(float64(rows), "runs/op")
		})
	}
}

// whereCases are listings of trellis runs list -workflow workflow-7 -where
// (50,000 of a million runs are workflow-7's).
var whereCases = []struct{ name, where string }{
	{"tier-gold", `input.tier == "gold"`},                          // a tenth; pushed down
	{"failed-gold", `status == "FAILED" && input.tier == "gold"`},  // status index, then pushed down
	{"amount-over-99000", `input.amountCents > 99000`},             // a hundredth; evaluated on each run
	{"express-small", `input.express && input.amountCents < 5000`}, // a sixtieth; evaluated on each run
	{"one-customer", `input.customerId == "customer-4242"`},        // one run in 100,000; pushed down
	{"recent-gold", `created > timestamp("2000-01-01T00:00:00Z") && input.tier == "gold"`},
}

// BenchmarkListRunsWhere times one page (50 runs, or what 20,000 runs
// scanned yield) of trellis runs list -workflow workflow-7 -where, through
// the operations API, on TRELLIS_BENCH_RUNS runs as BenchmarkListRuns.
//
//	TRELLIS_BENCH_RUNS=1000000 go test -run '^$' -bench ListRunsWhere -benchtime 50x ./runtime/store/pgstore/
func BenchmarkListRunsWhere(b *testing.B) {
	n := 100_000
	if v := os.Getenv("TRELLIS_BENCH_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("TRELLIS_BENCH_RUNS=%q: want a positive number", v)
		}
	}
	f := newListingFixture(b, n, true)
	ctx := context.Background()
	spec, err := json.Marshal(runtime.WorkflowSpec{
		Name: "workflow-7",
		InputSchema: `{"type":"object","required":["customerId","amountCents"],"properties":{
			"customerId":{"type":"string"},"amountCents":{"type":"integer"},"tier":{"type":"string"},"express":{"type":"boolean"}}}`,
		Steps: []spec.Step{{Name: "charge"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.store.SaveWorkflow(ctx, store.WorkflowVersion{Version: "v1", Name: "workflow-7", Spec: spec}); err != nil {
		b.Fatal(err)
	}
	engine, err := runtime.New(runtime.Config{Store: f.store})
	if err != nil {
		b.Fatal(err)
	}
	admin := ops.New(engine)
	for _, c := range whereCases {
		b.Run(c.name, func(b *testing.B) {
			var page *ops.RunPage
			for range b.N {
				if page, err = admin.ListRuns(ctx, ops.RunFilter{Workflow: "workflow-7", Where: c.where}); err != nil {
					b.Fatal(err)
				}
			}
			more := 0.0
			if page.Next != "" {
				more = 1
			}
			b.ReportMetric(float64(len(page.Runs)), "runs/op")
			b.ReportMetric(more, "next")
		})
	}
}

// fillTimeOrderedRuns inserts $1 runs over the day up to $2 whose ids are
// UUIDv7, as the engine makes them: the first 12 hex digits are the
// millisecond of the run's creation, so ids and creation times rise
// together.
const fillTimeOrderedRuns = `
INSERT INTO trellis_runs (id, workflow, version, tenant, status, input, unresolved_sinks, failed_step, created_at, finished_at)
SELECT (lpad(to_hex((extract(epoch FROM c.at) * 1000)::bigint), 12, '0') || '7' || substr(md5(i::text), 1, 3)
        || '8' || substr(md5(i::text), 4, 15))::uuid,
       'workflow-' || (i % 20), 'v1', 'tenant-' || ((i * 7919) % 1000), 'COMPLETED', '{}', 0, -1, c.at, c.at
FROM generate_series(1, $1::bigint) AS i
CROSS JOIN LATERAL (SELECT $2::timestamptz - (($1::bigint - i) * (interval '1 day' / $1::int)) AS at) c`

// TestIDPrefixReadsRunIDs checks that a listing by the start of a run id
// reads the primary key's range, for the engine's time-ordered ids, also
// for a prefix of a run created long before the newest: read in creation
// order instead, the listing would go through every run created since.
func TestIDPrefixReadsRunIDs(t *testing.T) {
	ctx := context.Background()
	traced := &listingQueries{}
	pool := tracedPool(t, traced)
	now := time.Now().UTC()
	if _, err := pool.Exec(ctx, fillTimeOrderedRuns, 200_000, now); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) trellis_runs`); err != nil {
		t.Fatal(err)
	}
	f := &listingFixture{store: pgstore.New(pool), pool: pool, traced: traced, now: now}
	var old, recent string
	if err := pool.QueryRow(ctx, `SELECT id::text FROM trellis_runs ORDER BY created_at LIMIT 1 OFFSET 10000`).Scan(&old); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT id::text FROM trellis_runs ORDER BY created_at DESC LIMIT 1 OFFSET 100`).Scan(&recent); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{old[:8], old[:13], recent[:8], "ffffffff"} {
		c := listCase{"id-prefix " + prefix, func(time.Time) store.RunQuery { return store.RunQuery{IDPrefix: idPrefix(prefix)} }}
		if runs := f.list(t, c); prefix != "ffffffff" && len(runs) == 0 {
			t.Errorf("%s: no run listed", c.name)
		}
		for _, plan := range f.explain(t, c) {
			if scans, seq, _, _ := summary(plan); len(scans) != 1 || scans[0] != "trellis_runs_pkey" || seq {
				t.Errorf("%s: want one scan, of trellis_runs_pkey; the plan:\n%s", c.name, plan)
			}
		}
	}
}

// TestTagListingUsesItsIndex: a listing of the runs carrying a tag few
// runs carry (trellis runs list -tag, and a where filter on a tag, which
// narrows to it) reads the GIN index of schema/0019, not every run in
// creation order; the runs it lists carry the tag.
func TestTagListingUsesItsIndex(t *testing.T) {
	f := newListingFixture(t, 20_000, false)
	ctx := context.Background()
	// Nine runs in ten are tagged, one in a thousand for customer rare.
	if _, err := f.pool.Exec(ctx, `
		UPDATE trellis_runs
		SET tags = jsonb_build_object('customer', CASE WHEN get_byte(uuid_send(id), 15) = 7 AND get_byte(uuid_send(id), 14) % 4 = 0 THEN 'rare' ELSE 'c' || (get_byte(uuid_send(id), 15) % 50) END,
		                              'channel', 'web')
		WHERE get_byte(uuid_send(id), 13) % 10 <> 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `VACUUM (ANALYZE) trellis_runs`); err != nil {
		t.Fatal(err)
	}
	var rare int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM trellis_runs WHERE tags @> '{"customer":"rare"}'`).Scan(&rare); err != nil || rare == 0 {
		t.Fatalf("%d runs tagged customer=rare (%v): the fixture needs some", rare, err)
	}
	c := listCase{"tag-rare", func(time.Time) store.RunQuery {
		return store.RunQuery{Tags: map[string]string{"customer": "rare", "channel": "web"}}
	}}
	runs := f.list(t, c)
	if len(runs) != min(rare, 51) {
		t.Fatalf("listed %d runs, want %d", len(runs), min(rare, 51))
	}
	for _, r := range runs {
		if r.Tags["customer"] != "rare" || r.Tags["channel"] != "web" {
			t.Fatalf("run %s has tags %v, yet was listed", r.ID, r.Tags)
		}
	}
	for _, plan := range f.explain(t, c) {
		if scans, seq, _, _ := summary(plan); len(scans) != 1 || scans[0] != "trellis_runs_tags" || seq {
			t.Errorf("want one scan, of trellis_runs_tags; the plan:\n%s", plan)
		}
	}
}
