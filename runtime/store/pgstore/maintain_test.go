package pgstore_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

func TestMaintainVacuumsTheQueueOnceItHasManyDeadRows(t *testing.T) {
	pool := pgtest.Pool(t)
	s := pgstore.New(pool)
	ctx := t.Context()
	now := time.Now()
	runs := make([]store.NewRun, 6000)
	for i := range runs {
		runs[i] = store.NewRun{ID: uuid.Must(uuid.NewV7()), Workflow: "w", Version: "w@1", Tenant: "t", Input: []byte(`{}`),
			Tasks: []store.NewTask{{Step: 0, Kind: store.KindCode, Plain: true, MaxAttempts: 1}}}
	}
	if _, err := s.CreateRuns(ctx, store.CreateRuns{Runs: runs, Now: now}); err != nil {
		t.Fatal(err)
	}
	for {
		got, err := s.ClaimTasks(ctx, store.Claim{Worker: "w", Limit: 1000, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
	}
	vacuums := func() (dead, count int64) {
		if err := pool.QueryRow(ctx, `SELECT n_dead_tup, vacuum_count FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'trellis_ready'`).Scan(&dead, &count); err != nil {
			t.Fatal(err)
		}
		return dead, count
	}
	// Table statistics arrive asynchronously.
	deadline := time.Now().Add(20 * time.Second)
	for dead, _ := vacuums(); dead <= 5000; dead, _ = vacuums() {
		if time.Now().After(deadline) {
			t.Fatalf("statistics never showed the %d dead queue rows", len(runs))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.Maintain(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, count := vacuums(); count == 0; _, count = vacuums() {
		if time.Now().After(deadline) {
			t.Fatal("Maintain did not vacuum trellis_ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMaintainAnalyzesWhatAutovacuumDoesNot: a burst of runs that nothing
// analyzed (autovacuum off for the table here, as it may be on a server)
// is analyzed by Maintain, so that plans see it.
func TestMaintainAnalyzesWhatAutovacuumDoesNot(t *testing.T) {
	pool := pgtest.Pool(t)
	s := pgstore.New(pool)
	ctx := t.Context()
	for _, table := range []string{"trellis_runs", "trellis_tasks", "trellis_events"} {
		if _, err := pool.Exec(ctx, `ALTER TABLE `+table+` SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
	}
	runs := make([]store.NewRun, 2000)
	for i := range runs {
		runs[i] = store.NewRun{ID: uuid.Must(uuid.NewV7()), Workflow: "w", Version: "w@1", Tenant: "t", Input: []byte(`{}`),
			Tasks: []store.NewTask{{Step: 0, Kind: store.KindCode, Plain: true, MaxAttempts: 1}}}
	}
	if _, err := s.CreateRuns(ctx, store.CreateRuns{Runs: runs, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	analyzed := func() (changed, count int64) {
		if err := pool.QueryRow(ctx, `SELECT n_mod_since_analyze, analyze_count FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'trellis_runs'`).Scan(&changed, &count); err != nil {
			t.Fatal(err)
		}
		return changed, count
	}
	// Table statistics arrive asynchronously.
	deadline := time.Now().Add(20 * time.Second)
	for changed, _ := analyzed(); changed < int64(len(runs)); changed, _ = analyzed() {
		if time.Now().After(deadline) {
			t.Fatalf("statistics never showed the %d new runs", len(runs))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, count := analyzed(); count != 0 {
		t.Fatalf("trellis_runs analyzed %d times before Maintain", count)
	}
	if err := s.Maintain(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, count := analyzed(); count == 0; _, count = analyzed() {
		if time.Now().After(deadline) {
			t.Fatal("Maintain did not analyze trellis_runs")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var estimate float64
	if err := pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'trellis_runs'::regclass`).Scan(&estimate); err != nil {
		t.Fatal(err)
	}
	if estimate != float64(len(runs)) {
		t.Errorf("the planner estimates %v runs after Maintain, want %d", estimate, len(runs))
	}
}
