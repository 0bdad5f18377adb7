package pgstore_test

import (
	"testing"

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
