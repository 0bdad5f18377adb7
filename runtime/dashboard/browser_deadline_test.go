package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/effectivelabs/trellis/runtime"
)

// A user opens a delayed run and sees when it starts, and a run whose
// deadline passed and sees the deadline and why it failed.
func TestBrowserDelayedRunAndDeadline(t *testing.T) {
	ctx := browser(t, 1280, 1000)
	_, w, base, _ := liveEngine(t)
	delayed, err := w.Trigger(t.Context(), []byte(`{"note":"later","amount":1}`), runtime.WithStartAfter(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// The probe's cool-off sleeps a second: a deadline of 300ms passes
	// during it.
	expired, err := w.Trigger(t.Context(), []byte(`{"note":"slow","amount":1}`), runtime.WithTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Wait(t.Context(), expired.ID); res == nil || res.Status != runtime.RunFailed {
		t.Fatalf("the run with a deadline ended %v, %v; want FAILED", res, err)
	}

	var startAt, finished, status string
	err = runStable(ctx,
		chromedp.Navigate(base+"/runs/"+delayed.ID.String()),
		chromedp.WaitVisible("#start-at"),
		chromedp.Text("#start-at", &startAt),
		chromedp.Text(`//dt[text()="Finished"]/following-sibling::dd[1]`, &finished, chromedp.BySearch),
		chromedp.Text("#run-status", &status),
	)
	if err != nil {
		t.Fatalf("opening the delayed run: %v", err)
	}
	if !strings.Contains(startAt, "delayed start, in ") || status != "RUNNING" || finished != "not started" {
		t.Errorf("the delayed run shows start %q, status %q, finished %q; want its start to come, RUNNING, not started", startAt, status, finished)
	}

	var deadline, failure string
	err = runStable(ctx,
		chromedp.Navigate(base+"/runs/"+expired.ID.String()),
		chromedp.WaitVisible("#failure"),
		chromedp.WaitVisible("#deadline"),
		chromedp.TextContent("#deadline", &deadline),
		chromedp.Text("#failure", &failure),
	)
	if err != nil {
		t.Fatalf("opening the run whose deadline passed: %v", err)
	}
	if deadline == "" || !strings.Contains(failure, "Failed: its deadline passed") || !strings.Contains(failure, "run deadline of 300ms passed") {
		t.Errorf("the run shows deadline %q and failure %q; want the deadline, and that it passed", deadline, failure)
	}
}

// A user triggers a delayed run with a timeout from the workflow's form:
// a delay that is no duration is refused, and once fixed the run's page
// says when it starts.
func TestBrowserTriggerDelayedRun(t *testing.T) {
	ctx := browser(t, 1280, 1000)
	_, w, base, _ := liveEngine(t)
	if _, err := w.Run(t.Context(), []byte(`{"note":"stores the workflow"}`)); err != nil {
		t.Fatal(err)
	}
	var problem, startAt, location string
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/workflows/probe"),
		chromedp.WaitVisible("#trigger"),
		chromedp.SendKeys(`input[name="input/note"]`, "later"),
		chromedp.SendKeys(`input[name="start-after"]`, "soon"),
		chromedp.SendKeys(`input[name="timeout"]`, "2h"),
		chromedp.Click("#trigger-submit"),
		chromedp.WaitVisible("#trigger-problem"),
		chromedp.Text("#trigger-problem", &problem),
	)
	if err != nil {
		t.Fatalf("triggering with a wrong delay: %v", err)
	}
	if !strings.Contains(problem, `start after: "soon" is not a positive duration`) {
		t.Errorf("the form says %q, want the delay's problem", problem)
	}
	// The page's live updates may replace the form's nodes between
	// finding the field and setting it ("No node with given id found"):
	// find it again then.
	for try := 0; ; try++ {
		err = chromedp.Run(ctx,
			chromedp.WaitVisible(`input[name="start-after"]`),
			chromedp.SetValue(`input[name="start-after"]`, "1h"),
		)
		if err == nil || try == 2 || !strings.Contains(err.Error(), "No node with given id") {
			break
		}
	}
	if err != nil {
		t.Fatalf("fixing the delay: %v", err)
	}
	err = chromedp.Run(ctx,
		chromedp.Click("#trigger-submit"),
		chromedp.WaitVisible("#start-at"),
		chromedp.Text("#start-at", &startAt),
		chromedp.Location(&location),
	)
	if err != nil {
		t.Fatalf("triggering with the delay fixed: %v", err)
	}
	id, perr := runtime.ParseRunID(strings.TrimPrefix(strings.SplitN(location, "?", 2)[0], base+"/runs/"))
	if perr != nil {
		t.Fatalf("the form led to %q, not a run's page", location)
	}
	if !strings.Contains(startAt, "delayed start, in ") {
		t.Errorf("the run's page says %q of its start", startAt)
	}
	run, err := w.Result(t.Context(), id)
	if err != nil || run.Status != runtime.RunRunning || len(run.Outputs) != 0 {
		t.Errorf("the delayed run: %+v, %v; want it running with nothing run yet", run, err)
	}
}
