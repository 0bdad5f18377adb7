package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/effectivelabs/trellis/examples/orders/workflow"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// orders is the example's order workflow: orders over $5,000 are
// rejected, and the card of every order whose id ends in 7 is declined.
// Validating takes a second and charging two, of the virtual clock, so
// that a timeline has something to draw.
type orders struct{ clock *clock.Virtual }

func (o orders) Validate(_ context.Context, in workflow.OrderProcessingInput) (workflow.OrderProcessingValidateOutput, error) {
	o.clock.Advance(time.Second)
	if in.AmountCents > 500_000 {
		reason := "amount over the $5,000 limit"
		return workflow.OrderProcessingValidateOutput{IsValid: false, Reason: &reason}, nil
	}
	return workflow.OrderProcessingValidateOutput{IsValid: true}, nil
}

func (o orders) Charge(_ context.Context, in workflow.OrderProcessingInput, _ workflow.OrderProcessingChargeParents) (workflow.OrderProcessingChargeOutput, error) {
	o.clock.Advance(2 * time.Second)
	if strings.HasSuffix(in.OrderID, "7") {
		return workflow.OrderProcessingChargeOutput{}, runtime.NonRetryable(errors.New("card declined by the issuer (code 51: insufficient funds)"))
	}
	id := "ch_" + in.OrderID
	return workflow.OrderProcessingChargeOutput{ChargeID: &id}, nil
}

func (orders) Reject(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingRejectParents) error {
	return nil
}

func (orders) PrepareShipment(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingPrepareShipmentParents) error {
	return nil
}

func (orders) Ship(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingShipParents) error {
	return nil
}

func (orders) Finalize(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingFinalizeParents) error {
	return nil
}

func (orders) NotifyAdmin(context.Context, workflow.OrderProcessingInput, runtime.Failure) error {
	return nil
}

// TestScreenshots writes PNGs of the main pages into the directory
// TRELLIS_SCREENSHOTS names (make screenshots; docs/how-to/dashboard.md shows them), over
// a day of order runs on Postgres, on a virtual clock. Without the
// variable it does nothing.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("TRELLIS_SCREENSHOTS")
	if dir == "" {
		t.Skip("set TRELLIS_SCREENSHOTS to a directory to write screenshots (make screenshots)")
	}
	ctx := browser(t, 1280, 900)
	pool := pgtest.Pool(t)
	h := trellistest.New(t, trellistest.WithStore(pgstore.New(pool)))
	client, err := workflow.RegisterOrderProcessing(h.Engine, orders{clock: h.Clock})
	if err != nil {
		t.Fatal(err)
	}
	// Two hours a day apart: the orders of the first finish their
	// fraud window during the second.
	n := 0
	hour := func() {
		for range 60 {
			for range 3 {
				n++
				in := workflow.OrderProcessingInput{OrderID: fmt.Sprintf("ord-%05d", n), AmountCents: int64(1_000 + n*37%9_000)}
				if n%23 == 0 {
					in.AmountCents = 750_000
				}
				if _, err := client.RunNoWait(t.Context(), in, runtime.WithTenant([]string{"acme", "globex", "initech"}[n%3])); err != nil {
					t.Fatal(err)
				}
			}
			h.Advance(time.Minute)
		}
	}
	hour()
	h.Advance(23 * time.Hour)
	// Schedules, which fire during the second hour: one each hour, one
	// each quarter (paused after), and a nightly one per tenant. Their
	// ticks after it, while the clock moves on with no engine firing
	// them, start no run.
	for i, tenant := range []string{"acme", "globex", "initech"} {
		in := workflow.OrderProcessingInput{OrderID: fmt.Sprintf("nightly-%s", tenant), AmountCents: 1_000}
		if _, err := client.CreateSchedule(t.Context(), "nightly-"+tenant, fmt.Sprintf("%d 2 * * *", 10*i), in,
			runtime.WithScheduleTenant(tenant), runtime.WithTimezone("Europe/Paris")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.CreateSchedule(t.Context(), "hourly-restock", "0 * * * *", workflow.OrderProcessingInput{OrderID: "restock", AmountCents: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateSchedule(t.Context(), "sweep", "*/15 * * * *", workflow.OrderProcessingInput{OrderID: "sweep", AmountCents: 100}); err != nil {
		t.Fatal(err)
	}
	hour()
	if _, err := h.Engine.PauseSchedule(t.Context(), "order-processing", "sweep"); err != nil {
		t.Fatal(err)
	}

	// Settlement batches, a map step over their orders: one item of the
	// second is declined.
	batches, err := h.Engine.Register(&runtime.WorkflowSpec{
		Name:        "settle-batch",
		InputSchema: `{"type":"object","required":["orders"],"properties":{"orders":{"type":"array","items":{"type":"string"}}}}`,
		Steps: []runtime.StepSpec{
			{Name: "settle", ForEach: &runtime.ForEachSpec{Items: "input.orders", ItemSchema: `{"type":"string"}`}},
			{Name: "report", Parents: []string{"settle"}},
		},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"settle": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			if string(req.Input) == `"ord-00317"` {
				return nil, runtime.NonRetryable(errors.New("settlement refused: chargeback pending"))
			}
			return json.RawMessage(`{}`), nil
		},
		"report": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for b := range 2 {
		var ids []string
		for i := range 120 {
			ids = append(ids, fmt.Sprintf("ord-%05d", 200+b*120+i))
		}
		in, _ := json.Marshal(map[string]any{"orders": ids})
		if _, err := batches.Trigger(t.Context(), in, runtime.WithTenant("acme")); err != nil {
			t.Fatal(err)
		}
		h.Advance(time.Minute)
	}
	var batch runtime.RunID // the batch with a refused item
	if page, err := ops.New(h.Engine).ListRuns(t.Context(), ops.RunFilter{Workflow: "settle-batch", Statuses: []runtime.RunStatus{runtime.RunFailed}}); err != nil || len(page.Runs) != 1 {
		t.Fatalf("the failed batch: %v, %v", page, err)
	} else {
		batch = page.Runs[0].ID
	}

	// Work no worker claims (the probe workflow has none here), a worker
	// that leads, and one that fell silent.
	other, err := runtime.New(runtime.Config{Store: h.Store, Clock: h.Clock})
	if err != nil {
		t.Fatal(err)
	}
	probe := (&probe{}).register(t, other)
	for i, tenant := range []string{"globex", "globex", "globex", "umbrella"} {
		if _, err := probe.Trigger(t.Context(), []byte(fmt.Sprintf(`{"note":"backlog %d"}`, i)), runtime.WithTenant(tenant)); err != nil {
			t.Fatal(err)
		}
		h.Clock.Advance(4 * time.Minute)
	}
	if _, err := h.Store.Heartbeat(t.Context(), "worker-eu-2", h.Now().Add(-5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := h.Store.AnnounceWorker(t.Context(), "worker-eu-1", []string{client.Workflow().Definition().Version()}, []string{"region=eu-west-1"}, h.Now()); err != nil {
		t.Fatal(err)
	}
	leader := h.Store.Leadership("worker-eu-1")
	if ok, err := leader.TryLead(t.Context()); err != nil || !ok {
		t.Fatalf("TryLead = %v, %v", ok, err)
	}
	t.Cleanup(func() { _ = leader.Resign(context.Background()) })

	admin := ops.New(h.Engine)
	failed, err := admin.ListRuns(t.Context(), ops.RunFilter{Workflow: "order-processing", Statuses: []runtime.RunStatus{runtime.RunFailed}, Limit: 1})
	if err != nil || len(failed.Runs) == 0 {
		t.Fatalf("no failed run to show: %v", err)
	}
	completed, err := admin.ListRuns(t.Context(), ops.RunFilter{
		Workflow: "order-processing", Statuses: []runtime.RunStatus{runtime.RunCompleted}, Where: "input.amountCents <= 500000", Limit: 1,
	})
	if err != nil || len(completed.Runs) == 0 {
		t.Fatalf("no completed run to show: %v", err)
	}
	sleeping, err := admin.ListRuns(t.Context(), ops.RunFilter{
		Workflow: "order-processing", Statuses: []runtime.RunStatus{runtime.RunRunning}, Where: "input.amountCents <= 500000", Limit: 1,
	})
	if err != nil || len(sleeping.Runs) == 0 {
		t.Fatalf("no run in its fraud window to show: %v", err)
	}
	dash, err := dashboard.New(admin, dashboard.Options{Clock: h.Clock})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dash)
	t.Cleanup(func() {
		dash.Close()
		srv.Close()
	})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// open, when set, is clicked before the picture is taken.
	shots := []struct{ name, path, ready, open string }{
		{"overview", "/", ".chart", ""},
		{"workflow", "/workflows/order-processing", "svg.dag", ""},
		{"runs", "/runs?status=FAILED&since=1h", "table.runs", ""},
		{"runs-nested", "/runs?limit=8", "table.runs", "#children-" + batch.String() + " summary"},
		{"run", "/runs/" + failed.Runs[0].ID.String(), "svg.timeline", ""},
		{"run-completed", "/runs/" + completed.Runs[0].ID.String(), "svg.timeline", ""},
		{"run-sleeping", "/runs/" + sleeping.Runs[0].ID.String(), "svg.timeline", ""},
		{"where", "/runs?workflow=order-processing&where=input.amountCent+%3E+100000", "#problem", ""},
		// The runs whose ids begin as the failed run's does (ids begin
		// with the time they were made).
		{"search", "/search?q=" + failed.Runs[0].ID.String()[:8], "#search-by-id", ""},
		{"workers", "/workers", "table.workers", ""},
		{"queue", "/queue?tenant=globex&workflow=probe", "table.queue", ""},
		{"schedules", "/schedules", "table.schedules", ""},
	}
	for _, s := range shots {
		var png []byte
		actions := []chromedp.Action{chromedp.Navigate(srv.URL + s.path), chromedp.WaitVisible(s.ready)}
		if s.open != "" {
			actions = append(actions, chromedp.Click(s.open), chromedp.WaitVisible(s.open+" + table"))
		}
		actions = append(actions, chromedp.FullScreenshot(&png, 100))
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The trigger form, refused: an amount that is not a number.
	var png []byte
	err = chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/workflows/order-processing"),
		chromedp.WaitVisible("#trigger"),
		chromedp.SendKeys(`input[name="input/orderId"]`, "ord-manual-1"),
		chromedp.SendKeys(`input[name="input/amountCents"]`, "12.50"),
		chromedp.SendKeys(`input[name="idempotency-key"]`, "manual-ord-1"),
		chromedp.Click("#trigger-submit"),
		chromedp.WaitVisible("#trigger-problem"),
		chromedp.ScrollIntoView("#trigger"),
		chromedp.Screenshot("#trigger", &png),
	)
	if err != nil {
		t.Fatalf("trigger: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trigger.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
