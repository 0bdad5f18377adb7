package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// The leader lock's key is shared with engines of other versions during a
// rolling upgrade, so it must not change: a session holding the key as
// earlier versions spelled it keeps every elector from leading.
func TestLeaderLockKeyIsStable(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var held bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended(current_schema() || '.trellis.leader', 0))`).Scan(&held); err != nil || !held {
		t.Fatalf("taking the lock as earlier versions do = %v, %v", held, err)
	}
	e := pgstore.New(pool).Leadership("new")
	if leads, err := e.TryLead(ctx); err != nil || leads {
		t.Fatalf("TryLead while another version leads = %v, %v; want false", leads, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended(current_schema() || '.trellis.leader', 0))`); err != nil {
		t.Fatal(err)
	}
	if leads, err := e.TryLead(ctx); err != nil || !leads {
		t.Fatalf("TryLead once the lock is free = %v, %v; want true", leads, err)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// FireTimers never waits for a run another transaction holds while it
// holds the run's timers (a cancel holds the run and then drops its
// timers: the two would deadlock). The held run's timer fires in a later
// round, and its sleep step completes then.
func TestFireTimersSkipsRunsHeldElsewhere(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	s := pgstore.New(pool)
	now := time.Now()
	id := uuid.Must(uuid.NewV7())
	if _, err := s.CreateRuns(ctx, store.CreateRuns{Now: now, Runs: []store.NewRun{{
		ID: id, Workflow: "nap", Version: "nap@v1", Tenant: "default", Input: []byte(`{}`),
		Tasks: []store.NewTask{{Step: 0, Kind: store.KindSleep, MaxAttempts: 1}},
	}}}); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimTasks(ctx, store.Claim{Worker: "w1", Limit: 1, Now: now})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claimed %v, %v", claimed, err)
	}
	a := store.Attempt{Key: claimed[0].Key, Attempt: claimed[0].Attempt}
	if _, err := s.Finish(ctx, store.Results{Now: now, Sleeps: []store.Sleep{{Attempt: a, For: time.Second}}}); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT id FROM trellis_runs WHERE id = $1 FOR NO KEY UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fired, err := s.FireTimers(short, now.Add(time.Minute), 10)
	if err != nil || len(fired) != 0 {
		t.Fatalf("FireTimers while the run is held = %+v, %v; want nothing fired at once", fired, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	fired, err = s.FireTimers(ctx, now.Add(time.Minute), 10)
	if err != nil || len(fired) != 1 || !fired[0].Completed || !fired[0].RunFinished {
		t.Fatalf("FireTimers once the run is free = %+v, %v; want the sleep completed and its run finished", fired, err)
	}
}
