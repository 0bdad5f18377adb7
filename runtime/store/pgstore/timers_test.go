package pgstore_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/internal/dbsqlc"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// TestKeyedEventMeetsItsWaitsDeadline sends a keyed event to a wait whose
// deadline is firing at that moment: the leader has taken the wait's
// timer (the first statement of FireTimers, run here by hand in a
// transaction held open) when the event arrives, and fires it while the
// sender waits. Neither may deadlock with the other: the sender waiting
// for the timer while the leader waits for the task made Postgres abort
// one of them after deadlock_timeout.
func TestKeyedEventMeetsItsWaitsDeadline(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	s := pgstore.New(pool)
	_, _, ref := deliveryWaiting(t, s)
	var deadline time.Time
	if err := pool.QueryRow(ctx, `SELECT wake_at FROM trellis_timers WHERE run_id = $1`, ref.ID).Scan(&deadline); err != nil {
		t.Fatalf("the confirm step's deadline timer: %v", err)
	}
	now := deadline.Add(time.Second)

	leader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = leader.Rollback(ctx) }()
	q := dbsqlc.New(leader)
	due, err := q.TimersDue(ctx, dbsqlc.TimersDueParams{Now: now, Lim: 10})
	if err != nil || len(due) != 1 {
		t.Fatalf("TimersDue = %v, %v; want the confirm step's timer", due, err)
	}

	sent := make(chan error, 1)
	go func() {
		_, err := s.SendEvents(ctx, store.SendEvents{Now: now, Events: []store.NewEvent{{
			Workflow: "delivery", Name: "delivered", Tenant: runtime.DefaultTenant, Key: "o-1", Payload: []byte(`{"signedBy":"ada"}`),
		}}})
		sent <- err
	}()
	// The sender goes as far as it can, and waits for the leader.
	for waiting := 0; waiting == 0; {
		select {
		case err := <-sent:
			t.Fatalf("SendEvents returned (%v) while the leader held the timer", err)
		case <-time.After(10 * time.Millisecond):
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ~ 'name: (EventDeliverByKey|TasksWake) '`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}

	// The rest of FireTimers.
	locked, err := q.TimersLockRuns(ctx, []uuid.UUID{due[0].RunID})
	if err != nil {
		t.Fatalf("TimersLockRuns: %v", err)
	}
	if len(locked) == 1 {
		if _, err := q.TimersFire(ctx, dbsqlc.TimersFireParams{RunIds: []uuid.UUID{due[0].RunID}, Steps: []int16{due[0].Step}, Now: now}); err != nil {
			t.Fatalf("TimersFire: %v", err)
		}
	}
	if err := leader.Commit(ctx); err != nil {
		t.Fatalf("committing the fired timer: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("SendEvents: %v", err)
	}

	// One of the two woke the wait, once.
	var wakes int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM trellis_event_log WHERE run_id = $1 AND step = $2 AND type = 'WOKEN'`,
		ref.ID, due[0].Step).Scan(&wakes); err != nil {
		t.Fatal(err)
	}
	if wakes != 1 {
		t.Errorf("the wait woke %d times, want once", wakes)
	}
}
