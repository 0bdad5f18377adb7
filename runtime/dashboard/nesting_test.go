package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/schema/spec"
)

// squares registers a map workflow whose item 7 fails, and runs it over
// n items; it returns the run.
func squares(t *testing.T, b *bundle, n int) runtime.RunID {
	t.Helper()
	wf, err := b.h.Engine.Register(&runtime.WorkflowSpec{
		Name:        "squares",
		InputSchema: `{"type":"object","required":["ns"],"properties":{"ns":{"type":"array","items":{"type":"integer"}}}}`,
		Steps:       []runtime.StepSpec{{Name: "square", ForEach: &runtime.ForEachSpec{Items: "input.ns", ItemSchema: `{"type":"integer"}`}}},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"square": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			if string(req.Input) == "7" {
				return nil, runtime.NonRetryable(errors.New("seven is unlucky"))
			}
			return json.RawMessage(`{}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ns := make([]int, n)
	for i := range ns {
		ns[i] = i
	}
	in, _ := json.Marshal(map[string]any{"ns": ns})
	ref, err := wf.Trigger(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	b.h.RunUntilIdle()
	return ref.ID
}

// TestBrowserRunsNestChildRuns: the runs list pages over the runs no step
// started; a map step's items are counted beneath their run, by status,
// the first few shown when opened, with a link to all of them; a filter
// by workflow or status still finds an item, with a link to its parent.
func TestBrowserRunsNestChildRuns(t *testing.T) {
	b := setup(t, dashboard.Options{})
	ctx := browser(t, 1280, 1000)
	parent := squares(t, b, 40)
	b.h.Advance(time.Minute)
	top := b.trigger(`{"note":"top"}`)
	items := b.h.Items(parent, "square")
	if len(items) != 40 {
		t.Fatalf("%d items", len(items))
	}

	var rows []string
	var summary string
	var shown int
	if err := runStable(ctx, chromedp.Navigate(b.base+"/runs"), chromedp.WaitVisible("table.runs"),
		chromedp.Evaluate(`[...document.querySelectorAll("table.runs:not(.nested) > tbody > tr:not(.children) a.id")].map(a => a.textContent)`, &rows),
		chromedp.Text("#children-"+parent.String()+" summary", &summary),
		chromedp.Click("#children-"+parent.String()+" summary"),
		chromedp.WaitVisible("#children-"+parent.String()+" table.nested"),
		chromedp.Evaluate(`document.querySelectorAll("#children-`+parent.String()+` tr.child").length`, &shown),
	); err != nil {
		t.Fatal(err)
	}
	if want := []string{top.String(), parent.String()}; strings.Join(rows, " ") != strings.Join(want, " ") {
		t.Errorf("the runs list's rows are %q, want the two top-level runs %q", rows, want)
	}
	for _, want := range []string{"40 child runs", "1 failed", "list all 40"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the children's summary %q lacks %q", summary, want)
		}
	}
	if shown != 5 {
		t.Errorf("opening the children shows %d of them, want the first 5", shown)
	}

	// The failed count lists the failed item; following it, the item
	// links back to its parent.
	var href string
	if err := chromedp.Run(ctx, chromedp.Click(`#children-`+parent.String()+` a.count.s-failed`), chromedp.WaitVisible("table.runs"),
		chromedp.AttributeValue(".parent a", "href", &href, nil)); err != nil {
		t.Fatal(err)
	}
	if href != "/runs/"+parent.String() {
		t.Errorf("the failed item links to %q, want its parent", href)
	}

	// Filters that say what runs are find the items too, each with its
	// parent.
	for _, q := range []string{"workflow=" + url.QueryEscape(spec.ItemsWorkflow("squares", "square")), "status=FAILED"} {
		page := b.page("/runs?"+q, http.StatusOK)
		if !strings.Contains(page, items[7].ID.String()) || !strings.Contains(page, `started by run <a class="mono" href="/runs/`+parent.String()+`">`) {
			t.Errorf("runs?%s does not show the failed item with a link to its parent", q)
		}
	}
}

// TestRunsSayWhatRunningRunsDo: a running run's row and page say which
// step runs and in which attempt, when a retry comes, and until when a
// wait for an event lasts.
func TestRunsSayWhatRunningRunsDo(t *testing.T) {
	b := setup(t, dashboard.Options{})
	var during []string // the runs list and the run's page while charge runs again
	var id runtime.RunID
	attempt := 0
	wf, err := b.h.Engine.Register(&runtime.WorkflowSpec{
		Name:   "orders",
		Events: []runtime.EventSpec{{Name: "order-confirmed", Schema: `{"type":"object"}`}},
		Steps: []runtime.StepSpec{
			{Name: "charge", Retry: runtime.RetryPolicy{MaxRetries: 3, InitialDelay: time.Minute, BackoffFactor: 1, MaxDelay: time.Minute}},
			{Name: "confirm", Parents: []string{"charge"}, WaitFor: &runtime.WaitForSpec{Event: "order-confirmed", Timeout: 2 * time.Hour}},
		},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"charge": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			if attempt++; attempt == 1 {
				return nil, errors.New("gateway timeout")
			}
			during = []string{b.page("/runs", http.StatusOK), b.page("/runs/"+id.String(), http.StatusOK)}
			return json.RawMessage(`{}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := wf.Trigger(t.Context(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	id = ref.ID
	b.h.RunUntilIdle()
	for _, path := range []string{"/runs", "/runs/" + id.String()} {
		if page := b.page(path, http.StatusOK); !strings.Contains(page, `<span class="step-name">charge</span> failed attempt 1, retrying at <time datetime="2030-01-01T00:01:00Z">2030-01-01 00:01:00Z</time> (in 1m00s)`) {
			t.Errorf("%s does not say when charge is retried", path)
		}
	}
	b.h.Advance(time.Minute)
	for i, page := range during {
		if !strings.Contains(page, `running <span class="step-name">charge</span> (attempt 2)`) {
			t.Errorf("page %d during charge's second attempt does not say it runs it", i)
		}
	}
	want := `<span class="step-name">confirm</span> waiting for event <span class="mono">order-confirmed</span> until <time datetime="2030-01-01T02:01:00Z">2030-01-01 02:01:00Z</time> (in 2h00m)`
	for _, path := range []string{"/runs", "/runs/" + id.String()} {
		if page := b.page(path, http.StatusOK); !strings.Contains(page, want) {
			t.Errorf("%s does not say what confirm waits for and until when", path)
		}
	}
	if page := b.page("/runs/"+id.String(), http.StatusOK); !strings.Contains(page, "<dt>Times out</dt>") {
		t.Error("the run page's confirm step does not say when it times out")
	}
	b.h.Advance(3 * time.Hour) // the wait times out, and the run fails
	if page := b.page("/runs", http.StatusOK); strings.Contains(page, "waiting for event") {
		t.Error("an ended run still says what it waits for")
	}
	_ = fmt.Sprint
}

// TestRunsListBoundsChildRuns: a run with 10,000 map items lists as one
// row, its items counted and five of them shown: the page stays small.
func TestRunsListBoundsChildRuns(t *testing.T) {
	b := setup(t, dashboard.Options{})
	parent := squares(t, b, 10_000)
	page := b.page("/runs", http.StatusOK)
	if rows := strings.Count(page, `class="mono id"`); rows != 1+5 {
		t.Errorf("the runs list shows %d runs, want the parent and 5 of its items", rows)
	}
	for _, want := range []string{"10000 child runs", `href="/runs?parent=` + parent.String() + `&amp;status=FAILED">1 failed</a>`, "list all 10000"} {
		if !strings.Contains(page, want) {
			t.Errorf("the runs list lacks %q", want)
		}
	}
	if len(page) > 64<<10 {
		t.Errorf("the runs list is %d bytes", len(page))
	}
}
