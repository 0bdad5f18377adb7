package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/examples/orders/workflow"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

func TestDemoRunsBothOrdersToCompletion(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), nil, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"order A-1001: run COMPLETED", "order A-1002: run COMPLETED",
		"fast-forwarding 24h0m0s", "shipped A-1001 after the fraud window", "closed A-1002: rejected",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestWorkerNeedsPostgres(t *testing.T) {
	if err := run(t.Context(), []string{"-worker"}, io.Discard); err == nil || !strings.Contains(err.Error(), "add -postgres") {
		t.Errorf("run -worker without -postgres = %v", err)
	}
}

// flakyShop declines the first charges of every order.
type flakyShop struct {
	shop
	mu          sync.Mutex
	failCharges int
}

func (s *flakyShop) Charge(ctx context.Context, in workflow.OrderProcessingInput, p workflow.OrderProcessingChargeParents) (workflow.OrderProcessingChargeOutput, error) {
	s.mu.Lock()
	fail := s.failCharges > 0
	s.failCharges--
	s.mu.Unlock()
	if fail {
		return workflow.OrderProcessingChargeOutput{}, errors.New("payment provider unavailable")
	}
	return s.shop.Charge(ctx, in, p)
}

// TestChargeRetrySchedule is the test-kit example of docs/how-to/testing.md: charge
// retries after 1s, then 2s more, and the 24h fraud window passes at once.
func TestChargeRetrySchedule(t *testing.T) {
	ctx := t.Context()
	h := trellistest.New(t)
	steps := &flakyShop{shop: shop{out: io.Discard, clock: h.Clock, start: h.Start}, failCharges: 2}
	orders, err := workflow.RegisterOrderProcessing(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := orders.RunNoWait(ctx, workflow.OrderProcessingInput{OrderID: "o-1", AmountCents: 1500})
	h.Settle() // retries (1s, 2s) and the 24h fraud window pass at once
	want := []time.Duration{0, time.Second, 3 * time.Second}
	if got := h.Times(ref.ID, "charge", runtime.EventStarted); !slices.Equal(got, want) {
		t.Errorf("charge attempts started at %v, want %v", got, want)
	}
	res, err := orders.Wait(ctx, ref.ID)
	if err != nil || res.Status != runtime.RunCompleted || res.Charge == nil || *res.Charge.ChargeID != "ch_o-1" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if got := h.Times(ref.ID, "ship", runtime.EventStarted); !slices.Equal(got, []time.Duration{3*time.Second + 24*time.Hour}) {
		t.Errorf("ship started at %v, want the fraud window after the charge", got)
	}
}

// TestFraudWindowHoldsTheShipment reads a run while it waits, with the
// typed client's Result: the order is charged and packed, and the
// shipment waits for the fraud window.
func TestFraudWindowHoldsTheShipment(t *testing.T) {
	ctx := t.Context()
	h := trellistest.New(t)
	orders, err := workflow.RegisterOrderProcessing(h.Engine, &shop{out: io.Discard, clock: h.Clock, start: h.Start})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := orders.RunNoWait(ctx, workflow.OrderProcessingInput{OrderID: "o-1", AmountCents: 1500})
	h.RunUntilIdle() // validate, charge and prepare-shipment run; the fraud window starts
	res, err := orders.Result(ctx, ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runtime.RunRunning || res.Charge == nil || res.Steps.FraudWindow != runtime.TaskSleeping || res.Steps.Ship != runtime.TaskPending {
		t.Fatalf("during the fraud window: %+v", res)
	}
	h.Advance(24 * time.Hour)
	if res, err = orders.Result(ctx, ref.ID); err != nil || res.Status != runtime.RunCompleted || res.Steps.Ship != runtime.TaskCompleted {
		t.Fatalf("after the fraud window: %+v, %v", res, err)
	}
}

// TestMetricsServed runs the demo with -metrics' server and scrapes it as
// Prometheus would.
func TestMetricsServed(t *testing.T) {
	metrics, err := startMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer metrics.Close(context.WithoutCancel(t.Context()))
	if err := demo(t.Context(), memstore.New(), metrics, io.Discard); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(metrics.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", metrics.URL(), resp.Status, err)
	}
	for _, want := range []string{
		`trellis_run_finished_total{otel_scope_name="github.com/effectivelabs/trellis/runtime",otel_scope_schema_url="",otel_scope_version="",trellis_run_outcome="completed",trellis_workflow_name="order-processing"} 2`,
		`trellis_task_finished_total{otel_scope_name="github.com/effectivelabs/trellis/runtime",otel_scope_schema_url="",otel_scope_version="",trellis_step_name="reject",trellis_task_outcome="skipped",trellis_workflow_name="order-processing"} 1`,
		`trellis_task_duration_seconds_count{otel_scope_name="github.com/effectivelabs/trellis/runtime",otel_scope_schema_url="",otel_scope_version="",trellis_step_name="ship",trellis_task_outcome="completed",trellis_workflow_name="order-processing"} 1`,
		`trellis_queue_depth{otel_scope_name="github.com/effectivelabs/trellis/runtime",otel_scope_schema_url="",otel_scope_version="",trellis_tenant_id="_other"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

// TestGatewayDown is -gateway-down: every charge fails at once, and a run
// retried once the gateway is back goes on from the charge.
func TestGatewayDown(t *testing.T) {
	ctx := t.Context()
	h := trellistest.New(t)
	steps := &shop{out: io.Discard, clock: h.Clock, start: h.Start, gatewayDown: true}
	orders, err := workflow.RegisterOrderProcessing(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := orders.RunNoWait(ctx, workflow.OrderProcessingInput{OrderID: "o-1", AmountCents: 1500})
	h.RunUntilIdle()
	res, _ := orders.Result(ctx, ref.ID)
	if res.Status != runtime.RunFailed || res.Failure == nil || res.Failure.Step != "charge" || !strings.Contains(res.Failure.Error, "payment gateway unavailable") {
		t.Fatalf("with the gateway down: %+v", res)
	}
	steps.gatewayDown = false
	if err := h.Engine.RetryRun(ctx, ref.ID); err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	if res, _ = orders.Result(ctx, ref.ID); res.Status != runtime.RunRunning || res.Charge == nil || res.Steps.FraudWindow != runtime.TaskSleeping {
		t.Fatalf("retried with the gateway back: %+v", res)
	}
}

// cancelOn is a writer that cancels a context when a line it is given is
// written: an interrupt at a known point of the demo.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	line   string
	cancel context.CancelFunc
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.Contains(string(p), w.line) {
		w.cancel()
	}
	return w.buf.Write(p)
}

// TestDemoOnPostgresInterrupted: a demo interrupted (Ctrl-C) while its
// runs wait still drops its schema.
func TestDemoOnPostgresInterrupted(t *testing.T) {
	db := pgtest.Database(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &cancelOn{line: "fast-forwarding", cancel: cancel}
	err := run(ctx, []string{"-postgres", "-database-url", db}, out)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("orders -postgres interrupted = %v, want context.Canceled\n%s", err, out.buf.String())
	}
	if strings.Contains(out.buf.String(), "run COMPLETED") {
		t.Fatalf("the demo was not interrupted:\n%s", out.buf.String())
	}
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left []string
	rows, err := conn.Query(t.Context(), "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'trellis_demo%'")
	if err == nil {
		left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(left) != 0 {
		t.Errorf("schemas left: %v, %v\n%s", left, err, out.buf.String())
	}
	if !strings.Contains(out.buf.String(), "dropped schema trellis_demo_orders_") {
		t.Errorf("the demo did not say it dropped its schema:\n%s", out.buf.String())
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
