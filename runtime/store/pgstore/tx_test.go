package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	"github.com/effectivelabs/trellis/testdata/acceptance"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

type pong struct{ n int }

func (p *pong) Pong(context.Context, multiproc.PingInput) error {
	p.n++
	return nil
}

func TestTriggerInCallerTransaction(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `CREATE TABLE orders (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	h := trellistest.New(t, trellistest.WithStore(pgstore.New(pool)))
	steps := &pong{}
	client, err := multiproc.RegisterPing(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}

	// Rolled back: neither the caller's row nor the run exists.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	gone, err := client.RunNoWait(ctx, multiproc.PingInput{}, runtime.WithTx(pgstore.Tx(tx)))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Engine.Result(ctx, gone.ID); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Fatalf("after rollback, Result = %v; want ErrRunNotFound", err)
	}
	if n := h.RunUntilIdle(); n != 0 || steps.n != 0 {
		t.Fatalf("a rolled-back run executed (%d tasks)", n)
	}

	// Committed: the run exists with the caller's row, and runs.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES (2)`); err != nil {
			return err
		}
		ref, err := client.RunNoWait(ctx, multiproc.PingInput{}, runtime.WithTx(pgstore.Tx(tx)))
		if err != nil {
			return err
		}
		// Not visible outside the transaction before it commits.
		if _, err := h.Engine.Result(ctx, ref.ID); !errors.Is(err, runtime.ErrRunNotFound) {
			t.Errorf("before commit, Result = %v; want ErrRunNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	if steps.n != 1 {
		t.Errorf("the committed run's step ran %d times, want once", steps.n)
	}

	// Run waits for the run to end, which cannot happen inside the
	// transaction: it says so instead of hanging.
	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := client.Run(ctx, multiproc.PingInput{}, runtime.WithTx(pgstore.Tx(tx))); err == nil {
		t.Error("Run inside a transaction did not refuse")
	}

	// Another store's transaction is refused, and the caller's transaction
	// goes on. (Anything that is not a store.Tx does not compile.)
	if _, err := client.RunNoWait(ctx, multiproc.PingInput{}, runtime.WithTx(otherTx{})); !errors.Is(err, errTxUnsupported()) {
		t.Errorf("a foreign transaction = %v", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES (3)`); err != nil {
		t.Errorf("the caller's transaction broke: %v", err)
	}
}

func TestMemoryStoreRefusesTransactions(t *testing.T) {
	h := trellistest.New(t)
	client, err := multiproc.RegisterPing(h.Engine, &pong{})
	if err != nil {
		t.Fatal(err)
	}
	pool := pgtest.Pool(t)
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(t.Context()) }()
	if _, err := client.RunNoWait(t.Context(), multiproc.PingInput{}, runtime.WithTx(pgstore.Tx(tx))); !errors.Is(err, errTxUnsupported()) {
		t.Errorf("memory store with a transaction = %v, want ErrTxUnsupported", err)
	}
}

func errTxUnsupported() error { return store.ErrTxUnsupported }

// otherTx is a transaction of some other store.
type otherTx struct{}

func (otherTx) StoreTx() {}

// TriggerMany with idempotency keys works inside a caller's transaction
// as outside it: a batch waits for a transaction that holds one of its
// keys and, once that commits, gets its run; a batch that is rolled back
// leaves its keys free.
func TestTriggerManyKeysInCallerTransaction(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	h := trellistest.New(t, trellistest.WithStore(pgstore.New(pool)))
	client, err := multiproc.RegisterPing(h.Engine, &pong{})
	if err != nil {
		t.Fatal(err)
	}
	two := []multiproc.PingInput{{}, {}}

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	held, err := client.RunManyNoWait(ctx, two, runtime.WithIdempotencyKeys("a", "b"), runtime.WithTx(pgstore.Tx(tx)))
	if err != nil || held[0].Existing || held[1].Existing {
		t.Fatalf("in the transaction: %+v, %v", held, err)
	}
	// Another caller's batch shares key b: it waits for the transaction.
	type answer struct {
		refs []runtime.RunRef
		err  error
	}
	racing := make(chan answer, 1)
	go func() {
		refs, err := client.RunManyNoWait(ctx, two, runtime.WithIdempotencyKeys("c", "b"))
		racing <- answer{refs, err}
	}()
	waitForLockWait(t, pool)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-racing
	if got.err != nil || got.refs[0].Existing || !got.refs[1].Existing || got.refs[1].ID != held[1].ID {
		t.Fatalf("racing batch = %+v, %v; want c created and b the committed run %s", got.refs, got.err, held[1].ID)
	}

	// Rolled back: the existing key answers, the new one is not kept.
	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := client.RunManyNoWait(ctx, two, runtime.WithIdempotencyKeys("a", "d"), runtime.WithTx(pgstore.Tx(tx)))
	if err != nil || !gone[0].Existing || gone[0].ID != held[0].ID || gone[1].Existing {
		t.Fatalf("second transaction: %+v, %v", gone, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := client.RunManyNoWait(ctx, two[:1], runtime.WithIdempotencyKeys("d"))
	if err != nil || again[0].Existing || again[0].ID == gone[1].ID {
		t.Fatalf("after rollback, key d = %+v, %v; want a new run", again, err)
	}
	if _, err := h.Engine.Result(ctx, gone[1].ID); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("the rolled-back run: Result = %v, want ErrRunNotFound", err)
	}
}

// waitForLockWait waits until a statement inserting runs waits on a lock
// (on a key a transaction holds), failing the test after 10s.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting bool
		err := pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '-- name: RunsInsert %' AND datname = current_database())`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the racing batch never waited for the transaction's key")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A publish in the caller's transaction starts its listeners' runs if
// and only if the transaction commits.
func TestPublishInCallerTransaction(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	h := trellistest.New(t, trellistest.WithStore(pgstore.New(pool)))
	if _, err := acceptance.RegisterReceipts(h.Engine, receipts{}); err != nil {
		t.Fatal(err)
	}
	payload := json.RawMessage(`{"id": "o-1", "total": 10}`)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := h.Engine.PublishEvent(ctx, "order-placed", "evt-1", payload, runtime.WithTx(pgstore.Tx(tx)))
	if err != nil || len(gone.Started()) != 1 {
		t.Fatalf("publish = %+v, %v; want one run", gone, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Engine.Result(ctx, gone.Started()[0]); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Fatalf("after rollback, Result = %v; want ErrRunNotFound", err)
	}
	if n := h.RunUntilIdle(); n != 0 {
		t.Fatalf("a rolled-back publish started %d tasks", n)
	}

	// The same event id again, committed: the rolled-back publish held
	// nothing, so this one starts the run.
	var kept runtime.Published
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		kept, err = h.Engine.PublishEvent(ctx, "order-placed", "evt-1", payload, runtime.WithTx(pgstore.Tx(tx)))
		return err
	})
	if err != nil || len(kept.Started()) != 1 || kept.Listeners[0].Existing {
		t.Fatalf("committed publish = %+v, %v; want one new run", kept, err)
	}
	h.RunUntilIdle()
	if res := h.Result(kept.Started()[0]); res.Status != runtime.RunCompleted {
		t.Fatalf("run = %s; want completed", res.Status)
	}
}

type receipts struct{}

func (receipts) Mail(context.Context, acceptance.ReceiptsInput) error { return nil }

type followups struct{}

func (followups) Thank(context.Context, acceptance.OrderFollowupInput, acceptance.OrderFollowupThankParents) (acceptance.OrderFollowupThankOutput, error) {
	return acceptance.OrderFollowupThankOutput{Note: "ok"}, nil
}

// A publish with a key in the caller's transaction starts its runs and
// delivers its event to the waits if and only if the transaction
// commits: rolled back, it did neither.
func TestPublishWithKeyInCallerTransaction(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	h := trellistest.New(t, trellistest.WithStore(pgstore.New(pool)))
	if _, err := acceptance.RegisterReceipts(h.Engine, receipts{}); err != nil {
		t.Fatal(err)
	}
	client, err := acceptance.RegisterOrderFollowup(h.Engine, followups{})
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := client.RunNoWait(ctx, acceptance.OrderFollowupInput{OrderID: "o-1"})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	h.Advance(time.Second)
	payload := json.RawMessage(`{"id": "o-1", "total": 10, "customer": "ada"}`)
	publish := func(tx pgx.Tx) (runtime.Published, error) {
		return h.Engine.PublishEvent(ctx, "order-placed", "evt-1", payload, runtime.WithEventKey("o-1"), runtime.WithTx(pgstore.Tx(tx)))
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := publish(tx)
	if err != nil || len(gone.Started()) != 1 || gone.Woken() != 1 {
		t.Fatalf("publish = %+v, %v; want one run started and one wait woken", gone, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Engine.Result(ctx, gone.Started()[0]); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Fatalf("after rollback, Result = %v; want ErrRunNotFound", err)
	}
	if n := h.RunUntilIdle(); n != 0 {
		t.Fatalf("a rolled-back publish queued %d tasks", n)
	}
	if got := h.Steps(waiting.ID)["placed"]; got != runtime.TaskWaiting {
		t.Fatalf("after rollback, the wait is %s; want WAITING", got)
	}

	// The same event id again, committed: the rolled-back publish held
	// nothing, neither the run nor the event's id.
	var kept runtime.Published
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		kept, err = publish(tx)
		return err
	})
	if err != nil || len(kept.Started()) != 1 || kept.Listeners[1].Existing || kept.Woken() != 1 {
		t.Fatalf("committed publish = %+v, %v; want a new run and the wait woken", kept, err)
	}
	h.RunUntilIdle()
	for _, id := range []runtime.RunID{kept.Started()[0], waiting.ID} {
		if res := h.Result(id); res.Status != runtime.RunCompleted {
			t.Fatalf("run %s = %s; want completed", res.Workflow, res.Status)
		}
	}
}
