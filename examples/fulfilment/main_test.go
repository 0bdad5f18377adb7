package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/examples/fulfilment/workflow"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

func TestDemoMemory(t *testing.T) { testDemo(t, memstore.New()) }

func TestDemoPostgres(t *testing.T) { testDemo(t, pgstore.New(pgtest.Pool(t))) }

func testDemo(t *testing.T, st store.Store) {
	var out bytes.Buffer
	if err := demo(t.Context(), st, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"charged 1 x KETTLE: €39.99", "charged 4 x MUG: €34.00", "charged 2 x LAMP: €49.00",
		"booked a courier for 2 parcel(s) to 1 Analytical Way, London",
		"fast-forwarding 48h0m0s", "Ada confirms delivery of F-2001 (woke 1 waiting step)",
		"order F-2001: €73.99 charged, shipped with Speedy (TRK-F-2001-2), delivery confirmed by Ada",
		"fast-forwarding 72h0m0s",
		"order F-2002: €49.00 charged, shipped with Speedy (TRK-F-2002-1), no confirmation in 3 days: support ticket opened",
		"order F-2001: run COMPLETED, 2 line(s) charged", "confirm-delivery COMPLETED",
		"order F-2002: run COMPLETED, 1 line(s) charged", "confirm-delivery SKIPPED",
		"order M-3001 from the marketplace starts nothing",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "GIFT-NOTE") {
		t.Errorf("the free line was charged:\n%s", out.String())
	}
}

// TestDeliveryConfirmed is the test-kit example of docs/how-to/testing.md: the
// customer confirms delivery after the two days in transit.
func TestDeliveryConfirmed(t *testing.T) {
	ctx := t.Context()
	h := trellistest.New(t)
	steps := &warehouse{out: io.Discard, clock: h.Clock, start: h.Start}
	if _, err := workflow.RegisterShipment(h.Engine, steps); err != nil { // the child's steps run here too
		t.Fatal(err)
	}
	client, err := workflow.RegisterFulfilment(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(ctx, orders[0])
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(48 * time.Hour) // charged, shipped, two days in transit
	if _, err := client.SendDeliveryConfirmed(ctx, orders[0].OrderID, workflow.FulfilmentDeliveryConfirmedEvent{SignedBy: "Ada"}); err != nil {
		t.Fatal(err)
	}
	res, err := client.Wait(ctx, ref.ID) // confirm-delivery completes, close runs
	if err != nil || res.ConfirmDelivery == nil || res.ConfirmDelivery.SignedBy != "Ada" {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
	if items := h.Items(ref.ID, "charge-line"); len(items) != 2 || items[1].Status != runtime.RunCompleted {
		t.Errorf("items of charge-line: %+v (one run per charged line)", items)
	}
	if ships := h.ChildRuns(ref.ID, "ship"); len(ships) != 1 || ships[0].Workflow != "shipment" {
		t.Errorf("runs of ship: %+v", ships)
	}
}

// TestNoConfirmation: three days without the event skip the wait, and the
// order is closed with a support ticket.
func TestNoConfirmation(t *testing.T) {
	ctx := t.Context()
	h := trellistest.New(t)
	steps := &warehouse{out: io.Discard, clock: h.Clock, start: h.Start}
	if _, err := workflow.RegisterShipment(h.Engine, steps); err != nil {
		t.Fatal(err)
	}
	client, err := workflow.RegisterFulfilment(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(ctx, orders[1])
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(48*time.Hour + 72*time.Hour)
	res, err := client.Result(ctx, ref.ID)
	if err != nil || res.Status != runtime.RunCompleted || res.Steps.ConfirmDelivery != runtime.TaskSkipped ||
		!strings.HasSuffix(res.Close.Summary, "support ticket opened") {
		t.Fatalf("Result = %+v, %v", res, err)
	}
}

// -h shows where the connection string comes from, never the password in
// $TRELLIS_DATABASE_URL.
func TestHelpHidesThePassword(t *testing.T) {
	t.Setenv("TRELLIS_DATABASE_URL", "postgres://trellis:s3cret-marker@db.example:5432/shop")
	var out bytes.Buffer
	if err := run(t.Context(), []string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h returned %v, want flag.ErrHelp", err)
	}
	if strings.Contains(out.String(), "s3cret-marker") {
		t.Errorf("-h shows the password:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "$TRELLIS_DATABASE_URL") {
		t.Errorf("-h does not say where the connection string comes from:\n%s", out.String())
	}
}
