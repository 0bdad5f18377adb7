package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/effectivelabs/trellis/runtime"
)

// A user goes from the overview to the workers, the queue and the
// schedules by the navigation, and pauses a schedule from its page.
func TestBrowserWorkersQueueSchedules(t *testing.T) {
	ctx := browser(t, 1280, 900)
	_, w, base, engine := liveEngine(t)
	if _, err := w.Run(t.Context(), []byte(`{"note":"stores the workflow"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.CreateSchedule(t.Context(), "hourly", "0 * * * *", []byte(`{"note":"h"}`)); err != nil {
		t.Fatal(err)
	}
	var workers, versions, queue, state string
	err := runStable(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`nav a[href="/trellis/workers"]`),
		chromedp.Click(`nav a[href="/trellis/workers"]`),
		chromedp.WaitVisible(`tr[data-worker="`+engine.WorkerID()+`"]`),
		chromedp.Text("#workers-summary", &workers),
		chromedp.Text(`tr[data-worker="`+engine.WorkerID()+`"] .versions`, &versions),
		chromedp.Click(`nav a[href="/trellis/queue"]`),
		chromedp.WaitVisible("#queue-summary"),
		chromedp.Text("#queue-summary", &queue),
		chromedp.Click(`nav a[href="/trellis/schedules"]`),
		chromedp.WaitVisible(`tr[data-schedule="probe/hourly"] button`),
	)
	if err != nil {
		t.Fatalf("visiting the workers, the queue and the schedules: %v", err)
	}
	if !strings.Contains(workers, "1 alive") || !strings.Contains(workers, "Leader: "+engine.WorkerID()) {
		t.Errorf("the workers page says %q, want one worker alive, leading", workers)
	}
	if versions != w.Definition().Version() {
		t.Errorf("the worker runs %q, says the workers page; want %s", versions, w.Definition().Version())
	}
	if !strings.Contains(queue, "queued") {
		t.Errorf("the queue page says %q", queue)
	}
	err = chromedp.Run(ctx,
		chromedp.Click(`tr[data-schedule="probe/hourly"] button`), // confirmed by the dialog listener
		chromedp.WaitVisible("#notice"),
	)
	if err == nil {
		err = runStable(ctx,
			chromedp.WaitVisible(`tr[data-schedule="probe/hourly"] .badge.s-cancelled`),
			chromedp.Text(`tr[data-schedule="probe/hourly"]`, &state),
		)
	}
	if err != nil {
		t.Fatalf("pausing the schedule: %v", err)
	}
	if list, err := engine.Schedules(t.Context(), "probe"); err != nil || len(list) != 1 || !list[0].Paused || !strings.Contains(state, "paused") || !strings.Contains(state, "Resume") {
		t.Errorf("after pausing from the page, the page says %q and the schedules are %+v, %v", state, list, err)
	}
}

// A user triggers a run from the form on the workflow's page: a wrong
// value is refused next to its field, and once fixed the run starts and
// its page shows it complete.
func TestBrowserTriggerRun(t *testing.T) {
	ctx := browser(t, 1280, 1000)
	_, w, base, _ := liveEngine(t)
	if _, err := w.Run(t.Context(), []byte(`{"note":"stores the workflow"}`)); err != nil {
		t.Fatal(err)
	}
	var problem, location string
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/workflows/probe"),
		chromedp.WaitVisible("#trigger"),
		chromedp.SendKeys(`input[name="input/note"]`, "from the form"),
		chromedp.SendKeys(`input[name="input/amount"]`, "ten"),
		chromedp.Click("#trigger-submit"),
		chromedp.WaitVisible("#trigger-problem"),
		chromedp.Text(`[data-field="input.amount"] .field-problem`, &problem),
	)
	if err != nil {
		t.Fatalf("triggering with a wrong amount: %v", err)
	}
	if !strings.Contains(problem, "integer") {
		t.Errorf("the amount field says %q, want the API's type error", problem)
	}
	err = chromedp.Run(ctx,
		chromedp.SetValue(`input[name="input/amount"]`, "10"),
		chromedp.Click("#trigger-submit"),
		chromedp.WaitVisible("#notice"),
		chromedp.Location(&location),
	)
	if err == nil {
		err = runStable(ctx, chromedp.WaitVisible(`#run-status .badge.s-completed`))
	}
	if err != nil {
		t.Fatalf("triggering with the amount fixed: %v", err)
	}
	id, perr := runtime.ParseRunID(strings.TrimPrefix(strings.SplitN(location, "?", 2)[0], base+"/runs/"))
	if perr != nil {
		t.Fatalf("the form led to %q, not a run's page", location)
	}
	res, err := w.Result(t.Context(), id)
	if err != nil || res.Status != runtime.RunCompleted || !strings.Contains(string(res.Outputs["fetch"]), `"amount":10,"note":"from the form"`) {
		t.Errorf("the triggered run: %v, %v; want it completed with the form's input", res, err)
	}
}
