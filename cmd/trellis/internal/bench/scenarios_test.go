package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// Smoke runs of every scenario at tiny sizes: they check that the results
// are complete and consistent, never how fast anything was.

// tinyOptions are sizes that run each scenario in a few seconds.
func tinyOptions(t *testing.T) Options {
	t.Helper()
	o := QuickOptions()
	o.Workers = []int{2}
	o.Runs = 60
	o.MemoryRuns = 100
	o.SteadyDuration = 1500 * time.Millisecond
	o.SteadyWarmup = 300 * time.Millisecond
	o.MaxBacklog = 50
	o.LatencyRuns = 10
	o.FairnessBacklog = 300
	o.FairnessTenants = 3
	o.FairnessRuns = 40
	o.Sleepers = 60
	o.Sleep = 2 * time.Second
	o.PurgeRuns = 2500
	o.WorkerCommand = testWorkers
	return o
}

// withPostgres returns tiny options on the test database, skipping the
// test without one (failing instead when TRELLIS_REQUIRE_DB=1).
func withPostgres(t *testing.T) Options {
	t.Helper()
	if testing.Short() {
		t.Skip("bench smoke runs start worker processes; skipped in -short mode")
	}
	pgtest.EmptySchema(t) // skips or fails without a database
	o := tinyOptions(t)
	o.DatabaseURL = pgtest.URL()
	return o
}

func checkPercentiles(t *testing.T, what string, p Percentiles, count int) {
	t.Helper()
	if p.Count != count {
		t.Errorf("%s: %d samples, want %d", what, p.Count, count)
	}
	if !(0 <= p.P50 && p.P50 <= p.P95 && p.P95 <= p.P99 && p.P99 <= p.Max) {
		t.Errorf("%s: percentiles out of order: %+v", what, p)
	}
}

// schemasLeft counts the bench schemas still in the database.
func schemasLeft(t *testing.T, names ...string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_namespace WHERE nspname = ANY($1)`, names).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBurnDown(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	res, err := BurnDown(t.Context(), o, DiamondLabel, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != o.Runs || res.Tasks != 6*o.Runs || res.Workers != 2 || res.Store != StorePostgres || res.Mode != ModeBurnDown {
		t.Errorf("burn-down = %+v, want %d runs and %d tasks on 2 workers", res, o.Runs, 6*o.Runs)
	}
	if res.Elapsed <= 0 || res.TasksPerSec <= 0 || res.InsertedPerSec <= 0 || res.WALPerTask <= 0 {
		t.Errorf("burn-down figures missing: %+v", res)
	}
	if math.Abs(res.TasksPerSec-6*res.RunsPerSec) > 1e-6*res.TasksPerSec {
		t.Errorf("tasks/s %v is not 6 x runs/s %v", res.TasksPerSec, res.RunsPerSec)
	}
}

func TestSteady(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	res, lat, err := Steady(t.Context(), o, ChainLabel, 2)
	if err != nil {
		t.Fatal(err)
	}
	// No run need finish in so short a window on a loaded machine (50
	// runs of 5 steps are in flight), but tasks must.
	if res.Mode != ModeSteady || res.Tasks <= 0 || res.Runs < 0 || res.Elapsed != o.SteadyDuration-o.SteadyWarmup {
		t.Errorf("steady = %+v", res)
	}
	if res.MinBacklog > o.MaxBacklog {
		t.Errorf("backlog %d above its bound %d", res.MinBacklog, o.MaxBacklog)
	}
	if lat.Case != LatencySteady || lat.Handoffs.Count == 0 {
		t.Errorf("steady latency = %+v, want hand-offs", lat)
	}
	checkPercentiles(t, "steady hand-offs", lat.Handoffs, lat.Handoffs.Count)
}

func TestPaced(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	res, lat, err := steady(t.Context(), o, chainShape(), 1, 40)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != ModePaced || res.Tasks <= 0 || res.InsertedPerSec != 40 || res.Elapsed != o.SteadyDuration-o.SteadyWarmup {
		t.Errorf("paced = %+v", res)
	}
	if lat.Case != LatencyPaced || lat.Handoffs.Count == 0 {
		t.Errorf("paced latency = %+v, want hand-offs", lat)
	}
	checkPercentiles(t, "paced hand-offs", lat.Handoffs, lat.Handoffs.Count)
}

func TestLatencyIdle(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	lat, err := RunLatency(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkPercentiles(t, "idle hand-offs", lat.Handoffs, 4*o.LatencyRuns)
}

func TestFairness(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	// Small claims, so that a tiny burn-down still completes tasks in its
	// first half (a claim's tasks complete together).
	o.Engine.Concurrency = 4
	f, err := RunFairness(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	l := f.Lone
	if l.Backlog != o.FairnessBacklog || l.Waiting < 0 || l.Waiting > l.Backlog || l.TasksAhead < l.ClaimsAhead || l.Wait < 0 {
		t.Errorf("lone tenant = %+v", l)
	}
	s := f.Shared
	if len(s.Shares) != o.FairnessTenants || s.FirstHalf <= 0 || s.FirstHalf > o.FairnessTenants*o.FairnessRuns {
		t.Fatalf("shared backlog = %+v", s)
	}
	sum, tasks := 0.0, 0
	for _, sh := range s.Shares {
		sum += sh.Share
		tasks += sh.Tasks
	}
	if math.Abs(sum-1) > 1e-9 || tasks != s.FirstHalf {
		t.Errorf("shares sum to %v over %d tasks, want 1 over %d: %+v", sum, tasks, s.FirstHalf, s.Shares)
	}
}

func TestSleep(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	s, err := RunSleep(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s.MostAsleep != o.Sleepers {
		t.Errorf("%d of %d asleep at once (notes %v)", s.MostAsleep, o.Sleepers, s.Notes)
	}
	checkPercentiles(t, "lateness", s.Lateness, o.Sleepers)
	if s.IdleGoroutines <= 0 || s.AsleepGoroutines <= 0 || s.IdleHeap == 0 || s.AsleepHeap == 0 {
		t.Errorf("memory figures missing: %+v", s)
	}
	if s.TableBytes <= 0 || s.BytesPerRun != float64(s.TableBytes)/float64(o.Sleepers) {
		t.Errorf("table figures: %d bytes, %v per run", s.TableBytes, s.BytesPerRun)
	}
	if s.Insert <= 0 || s.Asleep < s.Insert || s.Firing < 0 || s.Finish < 0 {
		t.Errorf("phase durations: %+v", s)
	}
	if s.AsleepCost.WAL <= 0 || s.WakeCost.WAL <= 0 {
		t.Errorf("costs per sleeping run: %+v, %+v", s.AsleepCost, s.WakeCost)
	}
	r := s.Reference
	if r.Runs != o.Sleepers || r.Tasks != 2*o.Sleepers || r.TasksPerSec <= 0 || r.Workflow != "pair" {
		t.Errorf("reference burn-down = %+v, want %d runs of two tasks", r, o.Sleepers)
	}
	if s.WokenTasksPerSec <= 0 || s.WokenRatio != s.WokenTasksPerSec/r.TasksPerSec {
		t.Errorf("woken rate %v, ratio %v against %v", s.WokenTasksPerSec, s.WokenRatio, r.TasksPerSec)
	}
}

func TestPurge(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	p, err := RunPurge(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []Throughput{p.Baseline, p.WithPurge} {
		if b.Runs != o.Runs || b.Tasks != 6*o.Runs || b.Workers != 1 || b.TasksPerSec <= 0 {
			t.Errorf("burn-down = %+v, want %d runs on one worker", b, o.Runs)
		}
	}
	if p.HistoryRuns != o.PurgeRuns || p.Purged != o.PurgeRuns || p.PurgedPerSec <= 0 || p.Elapsed <= 0 {
		t.Errorf("purge = %+v, want the %d history runs purged", p, o.PurgeRuns)
	}
	// 2,400 completed runs in three batches (two full), 50 failed, 50
	// cancelled.
	checkPercentiles(t, "batches", p.Batches, 5)
	if p.Ratio != p.WithPurge.TasksPerSec/p.Baseline.TasksPerSec || p.Overlap < 0 || p.Overlap > 1 || p.DuringBurnDown > p.Batches.Count {
		t.Errorf("purge figures inconsistent: %+v", p)
	}
}

func TestMemory(t *testing.T) {
	t.Parallel()
	o := tinyOptions(t)
	res, err := RunMemory(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("memory cases = %+v, want chain and diamond", res)
	}
	for i, tasks := range []int{5, 6} {
		r := res[i]
		if r.Store != StoreMemory || r.Runs != o.MemoryRuns || r.Tasks != tasks*o.MemoryRuns || r.TasksPerSec <= 0 || r.Elapsed <= 0 {
			t.Errorf("memory case %d = %+v", i, r)
		}
	}
}

// TestRunDropsSchemasAndKeepsOnRequest runs Run end to end on one
// scenario: the schema is gone afterwards, unless Keep.
func TestRunDropsSchemasAndKeepsOnRequest(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	o.Scenarios = []string{ScenarioLatency}
	var seen []string
	o.Log = schemaLogger(&seen)
	res, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Latency) != 1 || res.Environment.Postgres == "" || len(res.Errors) != 0 {
		t.Errorf("results = %+v", res)
	}
	if len(seen) != 1 || schemasLeft(t, seen...) != 0 {
		t.Errorf("schemas %v: want one, dropped", seen)
	}
}

func TestMap(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	o.MapItems = 500
	m, err := RunMap(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Items != 500 || m.ItemsPerSec <= 0 || m.Spawn <= 0 || m.Ready <= 0 || m.FanIn < 0 || m.WALPerItem <= 0 {
		t.Errorf("map figures: %+v", m)
	}
	// The spawn is a few statements in one transaction, however many
	// items: begin, lock, wait, insert runs, insert tasks, queue, commit.
	if m.SpawnStatements < 3 || m.SpawnStatements > 12 {
		t.Errorf("the spawn ran %d statements, want a handful whatever the items", m.SpawnStatements)
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	o.HistoryRuns = 2000
	h, err := RunHistory(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if h.HistoryRuns != o.HistoryRuns || h.HistoryInsert <= 0 || h.TableBytes <= 0 || len(h.WithHistory) != 2 {
		t.Fatalf("history = %+v", h)
	}
	slowest := h.WithHistory[0].TasksPerSec
	for i, b := range append([]Throughput{h.Empty}, h.WithHistory...) {
		if b.Runs != o.Runs || b.Tasks != 6*o.Runs || b.Workers != 1 || b.TasksPerSec <= 0 {
			t.Errorf("burn-down = %+v, want %d runs on one worker", b, o.Runs)
		}
		if i > 0 {
			slowest = min(slowest, b.TasksPerSec)
		}
	}
	if h.Ratio != slowest/h.Empty.TasksPerSec {
		t.Errorf("ratio %v, want the slower burn-down with the history over the empty one: %+v", h.Ratio, h)
	}
	if len(h.ClaimMs) != 0 && len(h.ClaimMs) != 3 {
		t.Errorf("claim times %v, want none or one per burn-down", h.ClaimMs)
	}
}
