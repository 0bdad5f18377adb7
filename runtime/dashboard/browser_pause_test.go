package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/effectivelabs/trellis/runtime"
)

// An operator pauses a workflow from its page (and confirms): the page
// says so, and a run triggered meanwhile waits, marked paused in the
// overview's queue and on the workflows list; resuming it from the page
// lets the run complete.
func TestBrowserPauseWorkflow(t *testing.T) {
	ctx := browser(t, 1280, 1000)
	_, w, base, engine := liveEngine(t)
	first, err := w.Trigger(t.Context(), []byte(`{"note":"stores the workflow","amount":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Wait(t.Context(), first.ID); err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("the first run: %v, %v", res, err)
	}

	var notice string
	err = runStable(ctx,
		chromedp.Navigate(base+"/workflows/probe"),
		chromedp.WaitVisible(`form.pause button`),
		chromedp.Click(`form.pause button`), // confirmed by the dialog listener
	)
	if err == nil {
		err = runStable(ctx,
			chromedp.WaitVisible(`#notice`),
			chromedp.Text(`#notice`, &notice),
			chromedp.WaitVisible(`h1 [data-paused="probe"]`),
			chromedp.WaitVisible(`tr[data-pause=""]`),
		)
	}
	if err != nil {
		t.Fatalf("pausing the workflow from its page: %v", err)
	}
	if pauses, err := engine.PausedWorkflows(t.Context()); err != nil || len(pauses) != 1 || pauses[0].Tenant != "" {
		t.Fatalf("after pressing Pause, the pauses are %+v, %v; want probe paused for every tenant", pauses, err)
	}

	held, err := w.Trigger(t.Context(), []byte(`{"note":"waits for the resume","amount":2}`))
	if err != nil {
		t.Fatal(err)
	}
	err = runStable(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`td [data-paused="probe"]`), // the held run's task, in the queue
		chromedp.Navigate(base+"/workflows"),
		chromedp.WaitVisible(`td [data-paused="probe"]`),
	)
	if err != nil {
		t.Fatalf("the overview's queue and the workflows list marking probe paused: %v", err)
	}
	if res, err := w.Result(t.Context(), held.ID); err != nil || res.Status != runtime.RunRunning {
		t.Fatalf("the run triggered while paused is %v, %v; want RUNNING, its first step held", res, err)
	}

	err = runStable(ctx,
		chromedp.Navigate(base+"/workflows/probe"),
		chromedp.WaitVisible(`tr[data-pause=""] button`),
		chromedp.Click(`tr[data-pause=""] button`),
	)
	if err == nil {
		err = runStable(ctx, chromedp.WaitVisible(`form.pause button`))
	}
	if err != nil {
		t.Fatalf("resuming the workflow from its page: %v", err)
	}
	wait, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if res, err := w.Wait(wait, held.ID); err != nil || res.Status != runtime.RunCompleted {
		t.Errorf("after the resume, the held run is %v, %v; want COMPLETED", res, err)
	}
	if !strings.HasPrefix(notice, "Paused") {
		t.Errorf("the workflow page said %q after the pause, want that it is paused", notice)
	}
}
