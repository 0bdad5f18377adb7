package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
)

// A finished run's page offers a rerun from each of its steps (not from
// its failure handler), through the same token, origin and confirmation
// as every action; a running run's page offers none.
func TestRerunFromAStep(t *testing.T) {
	b := setup(t, dashboard.Options{})
	id := b.failed(`{"note":"rerun me"}`)
	running := b.trigger(`{"note":"sleeping"}`)
	page := "/runs/" + id.String()
	body := b.page(page, http.StatusOK)
	for _, step := range []string{"fetch", "charge", "ship"} {
		if !strings.Contains(body, `<input type="hidden" name="step" value="`+step+`"><button type="submit" class="rerun-step" data-step="`+step+`">Rerun from here</button>`) {
			t.Errorf("the failed run's page offers no rerun from %s", step)
		}
	}
	if strings.Contains(body, `data-step="alert">Rerun`) {
		t.Error("the page offers a rerun from the failure handler")
	}
	if body := b.page("/runs/"+running.String(), http.StatusOK); strings.Contains(body, "Rerun from here") {
		t.Error("a running run's page offers a rerun")
	}

	path := page + "/rerun"
	token := b.token(page)
	form := func(step string) url.Values { return url.Values{"csrf": {token}, "confirm": {"yes"}, "step": {step}} }
	if code, _, _ := b.post(path, url.Values{"confirm": {"yes"}, "step": {"charge"}}, nil); code != http.StatusForbidden {
		t.Errorf("a rerun without the token = %d, want 403", code)
	}
	if code, body := b.get(path + "?step=charge"); code != http.StatusOK || !strings.Contains(body, "Rerun from a step?") ||
		!strings.Contains(body, `from step <span class="step-name">charge</span>`) || !strings.Contains(body, `<input type="hidden" name="step" value="charge">`) {
		t.Errorf("GET %s?step=charge = %d, want the confirmation naming the step", path, code)
	}
	code, _, body := b.post(path, form("chrage"), nil)
	if code != http.StatusBadRequest || !strings.Contains(body, `no step &#34;chrage&#34; to rerun from; did you mean &#34;charge&#34;?`) {
		t.Errorf("a rerun from a misspelt step = %d, want 400 guessing the step", code)
	}
	if st := b.h.Result(id).Status; st != runtime.RunFailed {
		t.Fatalf("the run is %s after refused reruns", st)
	}
	code, location, _ := b.post(path, form("charge"), map[string]string{"Origin": b.srv.URL, "Sec-Fetch-Site": "same-origin"})
	if code != http.StatusSeeOther || location != page+"?done=rerun" {
		t.Fatalf("a confirmed rerun = %d to %q, want 303 to the run", code, location)
	}
	if st := b.h.Result(id).Status; st != runtime.RunRunning {
		t.Fatalf("the run is %s after a confirmed rerun, want RUNNING", st)
	}
	body = b.page(location, http.StatusOK)
	if !strings.Contains(body, "Rerun: the step you chose and every step below it run again.") || !strings.Contains(body, `id="rerun-at"`) {
		t.Error("the run page does not say the run was rerun")
	}
	if !strings.Contains(body, "rerun from charge") {
		t.Error("the event log on the page does not show the rerun")
	}
	_, location, _ = b.post(path, form("charge"), nil)
	if location != page+"?done=not+rerunnable" {
		t.Errorf("rerunning a running run redirects to %q", location)
	}
}

// A user opens a completed run, opens a step's details from the DAG,
// presses "Rerun from here" (and confirms), and watches the step run
// again, live: the steps above it keep their attempts, the event log
// says the rerun.
func TestBrowserRerunFromAStep(t *testing.T) {
	ctx := browser(t, 1280, 1000)
	_, w, base, engine := liveEngine(t)
	ref, err := w.Trigger(t.Context(), []byte(`{"note":"once more","amount":40}`))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Wait(t.Context(), ref.ID); res == nil || res.Status != runtime.RunCompleted {
		t.Fatalf("the run ended %v, %v; want COMPLETED", res, err)
	}
	button := `button.rerun-step[data-step="charge"]`
	err = runStable(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/runs/%s", base, ref.ID)),
		chromedp.WaitVisible(`g.node.s-completed[data-step="charge"]`),
		chromedp.Click(`g.node[data-step="charge"] a`),
	)
	if err == nil {
		err = runStable(ctx, chromedp.WaitVisible(button), chromedp.Click(button)) // confirmed by the dialog listener
	}
	var notice, rerunAt string
	if err == nil {
		err = runStable(ctx,
			chromedp.WaitVisible("#notice"),
			chromedp.Text("#notice", &notice),
			chromedp.WaitVisible(`#run-status .badge.s-completed`),
			chromedp.Text("#rerun-at", &rerunAt),
			chromedp.Poll(`[...document.querySelectorAll("table.events tr")].some(tr => tr.textContent.includes("rerun from charge"))`, nil,
				chromedp.WithPollingTimeout(10*time.Second)),
		)
	}
	if err != nil {
		t.Fatalf("rerunning the run from charge: %v", err)
	}
	if !strings.Contains(notice, "Rerun:") || !strings.Contains(rerunAt, "from a step at") {
		t.Errorf("the page says %q and %q, want the rerun", notice, rerunAt)
	}
	events, err := engine.Events(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]int{}
	for _, ev := range events {
		if ev.Type == runtime.EventStarted {
			started[ev.Step]++
		}
	}
	if started["fetch"] != 1 || started["charge"] != 2 || started["ship"] != 2 {
		t.Errorf("attempts started by step = %v, want fetch once, charge and ship twice", started)
	}
}
