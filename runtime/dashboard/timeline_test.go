package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/schema/spec"
)

// napper registers "nap": three short steps that each take a few seconds
// of the virtual clock, a 24-hour durable sleep, and one more step.
func napper(t *testing.T, b *bundle) *runtime.Workflow {
	t.Helper()
	work := func(d time.Duration) runtime.StepFunc {
		return func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			b.h.Clock.Advance(d)
			return json.RawMessage(`{}`), nil
		}
	}
	wf, err := b.h.Engine.Register(&runtime.WorkflowSpec{Name: "nap", Steps: []spec.Step{
		{Name: "fetch"},
		{Name: "charge", Parents: []string{"fetch"}},
		{Name: "pack", Parents: []string{"charge"}},
		{Name: "nap", Parents: []string{"pack"}, Sleep: 24 * time.Hour},
		{Name: "ship", Parents: []string{"nap"}},
	}}, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"fetch": work(2 * time.Second), "charge": work(3 * time.Second), "pack": work(time.Second), "ship": work(2 * time.Second),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// bar is a timeline bar as a browser lays it out.
type bar struct {
	Class string  `json:"class"`
	Width float64 `json:"width"`
	Label string  `json:"label"`
	Title string  `json:"title"`
}

// bars reads the timeline's bars and its breaks' labels from the page at
// path.
func bars(t *testing.T, ctx context.Context, url string) ([]bar, []string) {
	t.Helper()
	var got []bar
	var breaks []string
	if err := runStable(ctx, chromedp.Navigate(url), chromedp.WaitVisible("svg.timeline"),
		chromedp.Evaluate(`[...document.querySelectorAll("svg.timeline g.bar")].map(g => ({
			class: g.querySelector("rect").getAttribute("class"),
			width: g.querySelector("rect").getBoundingClientRect().width,
			label: (g.querySelector("text") || {}).textContent || "",
			title: g.querySelector("title").textContent}))`, &got),
		chromedp.Evaluate(`[...document.querySelectorAll("svg.timeline text.break")].map(e => e.textContent)`, &breaks),
	); err != nil {
		t.Fatal(err)
	}
	return got, breaks
}

// TestBrowserTimelineCompressesLongSleep: a run that sleeps 24 hours
// between steps of a few seconds draws every step readably wide, the
// 24 hours as a break labelled with its length, and the sleep bar says
// 24h, both while it sleeps (when it used to say how long it had slept
// so far) and once it woke.
func TestBrowserTimelineCompressesLongSleep(t *testing.T) {
	b := setup(t, dashboard.Options{})
	ctx := browser(t, 1280, 900)
	wf := napper(t, b)
	ref, err := wf.Trigger(t.Context(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b.h.RunUntilIdle()
	b.h.Clock.Advance(time.Minute) // a minute into the sleep
	url := b.base + "/runs/" + ref.ID.String()

	check := func(when, sleepWord string) {
		t.Helper()
		got, breaks := bars(t, ctx, url)
		var ran, slept int
		for _, br := range got {
			switch {
			case strings.Contains(br.Class, "k-running"):
				ran++
				if br.Width < 40 {
					t.Errorf("%s: a step's bar is %.0fpx wide, too narrow to read: %q", when, br.Width, br.Title)
				}
			case strings.Contains(br.Class, "k-sleeping"):
				slept++
				if !strings.Contains(br.Label, sleepWord+" 24h") || !strings.Contains(br.Title, sleepWord+" 24h") {
					t.Errorf("%s: the sleep bar says %q (title %q), want %s 24h", when, br.Label, br.Title, sleepWord)
				}
			}
		}
		if ran == 0 || slept != 1 {
			t.Errorf("%s: %d step bars and %d sleep bars drawn: %+v", when, ran, slept, got)
		}
		if len(breaks) != 1 || !strings.HasPrefix(breaks[0], "2") || !strings.Contains(breaks[0], "h") {
			t.Errorf("%s: breaks %q, want one labelled with the sleep's length", when, breaks)
		}
	}
	check("asleep", "sleeping")
	// The run page and the runs list say what the running run does now,
	// and when its sleep ends.
	var doing, listed string
	// Live updates may replace a node as it is read (runStable reads
	// again) or leave it empty for a moment: each text is polled until it
	// says when the sleep ends.
	textOf := func(sel string) string {
		return `(() => { const e = document.querySelector(` + "`" + sel + "`" + `); return e && e.textContent.includes("until") ? e.textContent : ""; })()`
	}
	if err := runStable(ctx,
		chromedp.Navigate(url), chromedp.Poll(textOf("#doing"), &doing, chromedp.WithPollingTimeout(5*time.Second)),
		chromedp.Navigate(b.base+"/runs"), chromedp.Poll(textOf("ul.doing"), &listed, chromedp.WithPollingTimeout(5*time.Second)),
	); err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"the run page": doing, "the runs list": listed} {
		if want := "nap sleeping until 2030-01-02 00:00:06"; !strings.Contains(text, want) || !strings.Contains(text, "in 23h59m") {
			t.Errorf("%s says %q, want %q and when (in 23h59m)", where, text, want)
		}
	}

	b.h.Advance(24 * time.Hour)
	if st := b.h.Result(ref.ID).Status; st != runtime.RunCompleted {
		t.Fatalf("the run is %s after its sleep, want COMPLETED", st)
	}
	check("woken", "slept")
	// The event log dates the events of a later day than the run's.
	page := b.page("/runs/"+ref.ID.String(), http.StatusOK)
	if !strings.Contains(page, `<td class="mono">2030-01-02 00:00:06.000</td><td>nap</td><td>WOKEN</td>`) ||
		!strings.Contains(page, `<td class="mono">00:00:06.000</td><td>nap</td><td>SLEEPING</td>`) {
		t.Error("the event log does not date the wake a day later, nor the sleep by its time alone")
	}
}
