package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// The delivery workflow (testdata/acceptance/delivery.yaml) starts the
// shipment workflow as a child, with input built by expressions (ship)
// and by code (reship), then waits for a delivered event by order id and
// a review sent to the run.

type shipmentSteps struct{ calls calls }

func (s *shipmentSteps) Book(_ context.Context, in wf.ShipmentInput) (wf.ShipmentBookOutput, error) {
	s.calls.add("book " + in.OrderID)
	parcels := int64(1)
	if in.Parcels != nil {
		parcels = *in.Parcels
	}
	return wf.ShipmentBookOutput{Carrier: "dhl-" + in.City, Tracking: fmt.Sprintf("T-%s-%d", in.OrderID, parcels)}, nil
}

func (s *shipmentSteps) Label(_ context.Context, in wf.ShipmentInput, p wf.ShipmentLabelParents) (wf.ShipmentLabelOutput, error) {
	return wf.ShipmentLabelOutput{URL: "https://labels.example/" + p.Book.Tracking}, nil
}

type deliverySteps struct{}

func (deliverySteps) Pack(_ context.Context, in wf.DeliveryInput) (wf.DeliveryPackOutput, error) {
	return wf.DeliveryPackOutput{Parcels: 2}, nil
}

func (deliverySteps) Reship(_ context.Context, in wf.DeliveryInput, p wf.DeliveryReshipParents) (wf.DeliveryReshipInput, error) {
	return wf.DeliveryReshipInput{OrderID: in.OrderID + "-express", City: "hub"}, nil
}

func (deliverySteps) Close(_ context.Context, in wf.DeliveryInput, p wf.DeliveryCloseParents) (wf.DeliveryCloseOutput, error) {
	summary := "signed by " + p.Confirm.SignedBy
	if p.Feedback != nil {
		summary += fmt.Sprintf(", %d stars", p.Feedback.Stars)
	}
	if p.Reship != nil {
		summary += ", reshipped as " + p.Reship.Book.Tracking
	}
	return wf.DeliveryCloseOutput{Summary: summary}, nil
}

func testDelivery(t *testing.T, newH newHarness) {
	h := newH(t)
	ctx := t.Context()
	shipping := &shipmentSteps{}
	if _, err := wf.RegisterShipment(h.Engine, shipping); err != nil {
		t.Fatal(err)
	}
	client, err := wf.RegisterDelivery(h.Engine, deliverySteps{})
	if err != nil {
		t.Fatal(err)
	}
	start := func(in wf.DeliveryInput) runtime.RunID {
		t.Helper()
		ref, err := client.RunNoWait(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		h.RunUntilIdle()
		return ref.ID
	}

	t.Run("child runs, an event by key and a signal", func(t *testing.T) {
		id := start(wf.DeliveryInput{OrderID: "o-1", Address: wf.DeliveryInputAddress{City: "ghent"}, Express: ptr(true)})
		res, err := client.Result(ctx, id)
		if err != nil || res.Ship == nil || res.Ship.Book == nil || res.Ship.Book.Tracking != "T-o-1-2" || res.Ship.Label == nil ||
			res.Reship == nil || res.Reship.Book.Tracking != "T-o-1-express-1" || res.Steps.Confirm != runtime.TaskWaiting {
			t.Fatalf("Result = %+v, %v", res, err)
		}
		kids := h.ChildRuns(id, "ship")
		if len(kids) != 1 || kids[0].Workflow != "shipment" || kids[0].Status != runtime.RunCompleted ||
			kids[0].Parent == nil || kids[0].Parent.ID != id {
			t.Fatalf("ChildRuns(ship) = %+v", kids)
		}
		if n, err := client.SendDelivered(ctx, "o-1", wf.DeliveryDeliveredEvent{SignedBy: "ada"}); n != 1 || err != nil {
			t.Fatalf("SendDelivered = %d, %v", n, err)
		}
		h.RunUntilIdle()
		if err := client.SignalReview(ctx, id, wf.DeliveryReviewEvent{Stars: 4}); err != nil {
			t.Fatal(err)
		}
		res, err = client.Wait(ctx, id)
		if err != nil || res.Close == nil || res.Close.Summary != "signed by ada, 4 stars, reshipped as T-o-1-express-1" {
			t.Fatalf("Wait = %+v (close %+v), %v", res, res.Close, err)
		}
		checkTrail(t, h, id, "confirm", trail(queued, store.EventWaiting, woken, completed))
	})

	t.Run("the review times out and is skipped", func(t *testing.T) {
		id := start(wf.DeliveryInput{OrderID: "o-2", Address: wf.DeliveryInputAddress{City: "paris"}})
		if _, err := client.SendDelivered(ctx, "o-2", wf.DeliveryDeliveredEvent{SignedBy: "bob"}); err != nil {
			t.Fatal(err)
		}
		h.Advance(25 * time.Hour)
		res, err := client.Result(ctx, id)
		if err != nil || res.Status != runtime.RunCompleted || res.Steps.Feedback != runtime.TaskSkipped ||
			res.Steps.Reship != runtime.TaskSkipped || res.Close.Summary != "signed by bob" {
			t.Fatalf("Result = %+v, %v", res, err)
		}
	})

	t.Run("no delivery in three days fails the run", func(t *testing.T) {
		id := start(wf.DeliveryInput{OrderID: "o-3", Address: wf.DeliveryInputAddress{City: "oslo"}})
		h.Advance(72 * time.Hour)
		res, err := client.Result(ctx, id)
		if err != nil || res.Status != runtime.RunFailed || res.Failure == nil || res.Failure.Step != "confirm" ||
			!strings.Contains(res.Failure.Error, "no delivered event came within 72h") {
			t.Fatalf("Result = %+v (failure %+v), %v", res, res.Failure, err)
		}
	})

	t.Run("a payload its schema refuses", func(t *testing.T) {
		_, err := client.SendDelivered(ctx, "o-1", wf.DeliveryDeliveredEvent{})
		if err == nil || !strings.Contains(err.Error(), "payload.signedBy") {
			t.Errorf("SendDelivered with no signature: %v", err)
		}
	})
}

func ptr[T any](v T) *T { return &v }
