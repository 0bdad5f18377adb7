package pgstore_test

import (
	"context"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	"github.com/effectivelabs/trellis/testdata/acceptance"
)

type shipper struct{}

func (shipper) Book(context.Context, acceptance.ShipmentInput) (acceptance.ShipmentBookOutput, error) {
	return acceptance.ShipmentBookOutput{Carrier: "c", Tracking: "t"}, nil
}

func (shipper) Label(context.Context, acceptance.ShipmentInput, acceptance.ShipmentLabelParents) (acceptance.ShipmentLabelOutput, error) {
	return acceptance.ShipmentLabelOutput{URL: "u"}, nil
}

type deliverer struct{}

func (deliverer) Pack(context.Context, acceptance.DeliveryInput) (acceptance.DeliveryPackOutput, error) {
	return acceptance.DeliveryPackOutput{Parcels: 1}, nil
}

func (deliverer) Reship(context.Context, acceptance.DeliveryInput, acceptance.DeliveryReshipParents) (acceptance.DeliveryReshipInput, error) {
	return acceptance.DeliveryReshipInput{}, nil
}

func (deliverer) Close(context.Context, acceptance.DeliveryInput, acceptance.DeliveryCloseParents) (acceptance.DeliveryCloseOutput, error) {
	return acceptance.DeliveryCloseOutput{Summary: "ok"}, nil
}

// deliveryWaiting runs a delivery run (order o-1) on s until its confirm
// step waits for its keyed event, delivered, with a 72h deadline.
func deliveryWaiting(t *testing.T, s *pgstore.Store) (*trellistest.Harness, *acceptance.DeliveryClient, runtime.RunRef) {
	t.Helper()
	h := trellistest.New(t, trellistest.WithStore(s))
	if _, err := acceptance.RegisterShipment(h.Engine, shipper{}); err != nil {
		t.Fatal(err)
	}
	client, err := acceptance.RegisterDelivery(h.Engine, deliverer{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(t.Context(), acceptance.DeliveryInput{OrderID: "o-1", Address: acceptance.DeliveryInputAddress{City: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	return h, client, ref
}

// TestSendEventInCallerTransaction sends events inside the caller's
// transaction: one rolled back is never delivered, one committed is.
func TestSendEventInCallerTransaction(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `CREATE TABLE deliveries (order_id text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	h, client, ref := deliveryWaiting(t, pgstore.New(pool))
	waiting := func() runtime.TaskStatus {
		t.Helper()
		res, err := client.Result(ctx, ref.ID)
		if err != nil {
			t.Fatal(err)
		}
		return res.Steps.Confirm
	}
	if got := waiting(); got != runtime.TaskWaiting {
		t.Fatalf("confirm is %s, want WAITING", got)
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO deliveries VALUES ('o-1')`); err != nil {
		t.Fatal(err)
	}
	n, err := client.SendDelivered(ctx, "o-1", acceptance.DeliveryDeliveredEvent{SignedBy: "ghost"}, runtime.WithTx(pgstore.Tx(tx)))
	if err != nil || n != 1 {
		t.Fatalf("SendDelivered in a transaction = %d, %v", n, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	if got := waiting(); got != runtime.TaskWaiting {
		t.Fatalf("after a rolled-back send, confirm is %s, want WAITING", got)
	}

	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO deliveries VALUES ('o-1')`); err != nil {
		t.Fatal(err)
	}
	if err := client.SignalDelivered(ctx, ref.ID, acceptance.DeliveryDeliveredEvent{SignedBy: "ada"}, runtime.WithTx(pgstore.Tx(tx))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	res, err := client.Result(ctx, ref.ID)
	if err != nil || res.Confirm == nil || res.Confirm.SignedBy != "ada" {
		t.Fatalf("after a committed signal: %+v, %v", res, err)
	}
}
