package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
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
