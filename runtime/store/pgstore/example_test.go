package pgstore_test

import (
	"context"
	"encoding/json"
	"log"

	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// Workers on Postgres: connect, migrate, register workflows and start.
// Run as many such processes as you like against one database.
func Example() {
	ctx := context.Background()
	pool, err := pgstore.Connect(ctx, "postgres://postgres@127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	engine, err := runtime.New(runtime.Config{Store: pgstore.New(pool)})
	if err != nil {
		log.Fatal(err)
	}
	// workflow.RegisterOrderProcessing(engine, steps) with generated code.
	if err := engine.Start(ctx); err != nil {
		log.Fatal(err)
	}
	// ... until the process is told to stop (SIGTERM), then finish the
	// running steps and hand over leadership:
	if err := engine.Stop(ctx); err != nil {
		log.Print(err)
	}
}

// A run created in the caller's transaction exists if and only if the
// transaction commits: an order and the workflow that processes it are
// stored together.
func ExampleTx() {
	ctx := context.Background()
	pool, err := pgstore.Connect(ctx, "postgres://postgres@127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	engine, err := runtime.New(runtime.Config{Store: pgstore.New(pool)})
	if err != nil {
		log.Fatal(err)
	}
	orders, err := engine.Workflow(&runtime.WorkflowSpec{Name: "order", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{{Name: "charge"}}})
	if err != nil {
		log.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orders (id) VALUES (42)`); err != nil {
			return err
		}
		_, err := orders.Trigger(ctx, json.RawMessage(`{"id":42}`), runtime.WithTx(pgstore.Tx(tx)))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}
