package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/schema/spec"
)

// The workers page lists every worker with its state, heartbeat,
// running tasks and the leader, a page at a time, to users who see
// every tenant; the overview shows the first few and links to it.
func TestWorkersPage(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate})
	alice := b.as("alice", "ecila")
	ctx := t.Context()
	for i := range 130 {
		at := b.h.Now()
		if i%10 == 0 {
			at = at.Add(-10 * time.Minute) // silent
		}
		if _, err := b.h.Store.Heartbeat(ctx, fmt.Sprintf("worker-%03d", i), at); err != nil {
			t.Fatal(err)
		}
	}
	version := b.workflow.Definition().Version()
	if err := b.h.Store.AnnounceWorker(ctx, "worker-042", []string{version}, []string{"gpu=a100", "region=eu"}, b.h.Now()); err != nil {
		t.Fatal(err)
	}
	leader := b.h.Store.Leadership("worker-042")
	if ok, err := leader.TryLead(ctx); err != nil || !ok {
		t.Fatalf("TryLead = %v, %v", ok, err)
	}
	t.Cleanup(func() { _ = leader.Resign(t.Context()) })

	page := alice.page("/workers", http.StatusOK)
	for _, want := range []string{"117 <span class=\"badge s-completed\"", ">alive</span>, 13 <span class=\"badge s-failed\"", ">silent</span>. Leader:", "Leader: <strong class=\"mono\">worker-042</strong>",
		`data-worker="worker-042"`, `data-worker="worker-000"`, "10m00s ago", "Showing 1–100 of 130", `href="/workers?page=2"`, `aria-current="page">Workers`} {
		if !strings.Contains(page, want) {
			t.Errorf("the workers page lacks %s", want)
		}
	}
	if strings.Index(page, `data-worker="worker-042"`) > strings.Index(page, `data-worker="worker-000"`) {
		t.Error("the leader is not listed first")
	}
	if row := rowOf(t, page, `data-worker="worker-042"`); !strings.Contains(row, `href="/workflows/probe?version=`+url.QueryEscape(version)+`">`+version+`</a>`) {
		t.Errorf("the leader's row does not link the version it runs: %s", row)
	}
	if row := rowOf(t, page, `data-worker="worker-042"`); !strings.Contains(row, `<span class="mono">gpu=a100</span>, <span class="mono">region=eu</span>`) {
		t.Errorf("the leader's row does not show its labels: %s", row)
	}
	if row := rowOf(t, page, `data-worker="worker-001"`); !strings.Contains(row, "none announced") {
		t.Errorf("a worker that announced nothing: %s", row)
	}
	if n := strings.Count(page, "data-worker="); n != 100 {
		t.Errorf("the first page lists %d workers, want 100", n)
	}
	if n := strings.Count(alice.page("/workers?page=2", http.StatusOK), "data-worker="); n != 30 {
		t.Errorf("the second page lists %d workers, want 30", n)
	}
	alice.page("/workers?page=zero", http.StatusBadRequest)
	overview := alice.page("/", http.StatusOK)
	if !strings.Contains(overview, "130 workers: <a href=\"/workers\">see them all</a>") || strings.Count(overview, `<td class="mono">worker-`) != 10 ||
		!strings.Contains(overview, `<td class="mono">worker-042 <span class="pill">leader</span>`) {
		t.Error("the overview does not keep to a summary of the workers linking to their page")
	}
	if ev := alice.live("/live/workers").next(t, "worker-042"); !strings.Contains(ev, "Showing 1–100 of 130") {
		t.Error("the workers page's live update is not the page")
	}
	if body := b.as("carol", "lorac").page("/workers", http.StatusOK); strings.Contains(body, "worker-042") || !strings.Contains(body, "shown to users who see every tenant") {
		t.Error("a user who sees some tenants is shown the workers")
	}
}

// The queue page shows each tenant's and workflow's queued and running
// tasks and the oldest wait, longest first, of the tenants the user
// sees, updating live.
func TestQueuePage(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate})
	for _, tenant := range []string{"initech", "acme", "acme"} {
		if _, err := b.workflow.Trigger(t.Context(), []byte(`{"note":"queued"}`), runtime.WithTenant(tenant)); err != nil {
			t.Fatal(err)
		}
		b.h.Clock.Advance(2 * time.Minute)
	}
	alice := b.as("alice", "ecila")
	page := alice.page("/queue", http.StatusOK)
	for _, want := range []string{"3 tasks queued (0 held by concurrency limits, 0 paced by rate limits), 0 running.", ">initech</a>", ">acme</a>", "6m00s", "4m00s", `href="/workflows/probe"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the queue page lacks %s", want)
		}
	}
	if strings.Index(page, ">initech</a>") > strings.Index(page, ">acme</a>") {
		t.Error("the longest wait is not first")
	}
	live := alice.live("/live/queue")
	live.next(t, "3 tasks queued")
	if _, err := b.workflow.Trigger(t.Context(), []byte(`{}`), runtime.WithTenant("globex")); err != nil {
		t.Fatal(err)
	}
	live.next(t, ">globex</a>")
	carol := b.as("carol", "lorac").page("/queue", http.StatusOK)
	if strings.Contains(carol, "initech") || strings.Contains(carol, "globex") || !strings.Contains(carol, "2 tasks queued") {
		t.Error("carol's queue shows other tenants' work")
	}
	if !strings.Contains(alice.page("/", http.StatusOK), `href="/queue">the whole queue</a>`) {
		t.Error("the overview does not link to the queue")
	}

	// Runs of one customer, one at a time: the others are held.
	limited, err := b.h.Engine.Workflow(&runtime.WorkflowSpec{Name: "limited", InputSchema: `{"type":"object","properties":{"customer":{"type":"string"}}}`, Concurrency: &spec.Concurrency{Key: "input.customer", Max: 1},
		Steps: []spec.Step{{Name: "work"}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := limited.Trigger(t.Context(), []byte(`{"customer":"c1"}`), runtime.WithTenant("acme")); err != nil {
			t.Fatal(err)
		}
	}
	page = alice.page("/queue", http.StatusOK)
	if row := rowOf(t, page, `href="/workflows/limited"`); !strings.Contains(row, `<td class="num">3</td><td class="num">2</td>`) || !strings.Contains(page, "(2 held by concurrency limits,") {
		t.Errorf("the queue does not show 2 of limited's 3 queued tasks held: %s", row)
	}

	// Where a group waits, by step.
	if !strings.Contains(page, `href="/queue?tenant=acme&amp;workflow=limited">by step</a>`) {
		t.Error("the queue's rows do not link to their steps")
	}
	steps := alice.page("/queue?tenant=acme&workflow=limited", http.StatusOK)
	if row := rowOf(t, steps, `<td class="step-name">work</td>`); !strings.Contains(row, `<td class="num">3</td><td class="num">2</td>`) ||
		!strings.Contains(row, limited.Definition().Version()) {
		t.Errorf("limited's steps: %s", row)
	}
	if row := rowOf(t, alice.page("/queue?tenant=acme&workflow=probe", http.StatusOK), `<td class="step-name">fetch</td>`); !strings.Contains(row, `<td class="num">2</td><td class="num">-</td>`) ||
		!strings.Contains(row, "4m00s") {
		t.Errorf("probe's steps for acme: %s", row)
	}
	if body := b.as("carol", "lorac").page("/queue?tenant=initech&workflow=probe", http.StatusOK); !strings.Contains(body, "You see the queue of tenants acme only") ||
		strings.Contains(body, `<td class="step-name">fetch</td>`) {
		t.Error("carol sees where initech's runs wait")
	}

	// Runs of one rate limit: one starts, the others wait for their turn.
	paced, err := b.h.Engine.Register(&runtime.WorkflowSpec{Name: "paced", RateLimit: &spec.RateLimit{Limit: 1, Per: time.Hour},
		Steps: []spec.Step{{Name: "call"}}}, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"call": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := paced.Trigger(t.Context(), []byte(`{}`), runtime.WithTenant("acme")); err != nil {
			t.Fatal(err)
		}
	}
	b.h.RunUntilIdle()
	page = alice.page("/queue", http.StatusOK)
	if row := rowOf(t, page, `href="/workflows/paced"`); !strings.Contains(row, `<td class="num">2</td><td class="num">-</td><td class="num">2</td>`) ||
		!strings.Contains(page, "2 paced by rate limits") {
		t.Errorf("the queue does not show paced's 2 tasks waiting for their turn: %s", row)
	}
}

// The schedules page lists every workflow's schedules with their next
// and latest ticks, the run the latest started and pause and resume
// buttons, a page at a time, of the tenants the user sees.
func TestSchedulesPage(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate})
	ctx := t.Context()
	b.h.Clock.Set(time.Date(2026, 3, 10, 14, 58, 0, 0, time.UTC))
	b.trigger(`{"note":"stores the workflow"}`)
	if _, err := b.workflow.CreateSchedule(ctx, "hourly", "0 * * * *", []byte(`{"note":"h"}`), runtime.WithScheduleTenant("acme")); err != nil {
		t.Fatal(err)
	}
	for i := range 4999 { // a fleet's worth: the page shows a hundred
		if _, err := b.workflow.CreateSchedule(ctx, fmt.Sprintf("s%04d", i), "0 3 * * *", []byte(`{}`), runtime.WithScheduleTenant("initech")); err != nil {
			t.Fatal(err)
		}
	}
	b.h.Advance(3 * time.Minute) // the hourly tick at 15:00 starts a run
	alice := b.as("alice", "ecila")
	page := alice.page("/schedules", http.StatusOK)
	row := rowOf(t, page, `data-schedule="probe/hourly"`)
	for _, want := range []string{"0 * * * *", "acme", "in 57m00s", "3m00s ago", `class="last-run"`, "/schedules/hourly/pause", `name="from" value="schedules"`} {
		if !strings.Contains(row, want) {
			t.Errorf("the hourly schedule's row lacks %s: %s", want, row)
		}
	}
	if !strings.Contains(page, "5000 schedules, 0 paused.") || !strings.Contains(page, "Showing 1–100 of 5000") || strings.Count(page, "data-schedule=") != 100 {
		t.Error("the schedules page does not show the first 100 of 5000")
	}
	last := alice.page("/schedules?page=50", http.StatusOK)
	if n := strings.Count(last, "data-schedule="); n != 100 || !strings.Contains(last, `data-schedule="probe/s4998"`) || strings.Contains(last, `rel="next"`) {
		t.Errorf("the last page shows %d schedules, want the last 100", n)
	}

	token := alice.token("/schedules")
	code, location, _ := alice.post("/workflows/probe/schedules/hourly/pause", url.Values{"csrf": {token}, "confirm": {"yes"}, "from": {"schedules"}}, nil)
	if code != http.StatusSeeOther || location != "/schedules?done=pause" {
		t.Fatalf("pausing from the schedules page answered %d to %q", code, location)
	}
	row = rowOf(t, alice.page(location, http.StatusOK), `data-schedule="probe/hourly"`)
	if !strings.Contains(row, "paused") || !strings.Contains(row, "/schedules/hourly/resume") || strings.Contains(row, "in 57m") {
		t.Errorf("the paused schedule's row: %s", row)
	}

	if !strings.Contains(alice.page("/workflows/probe", http.StatusOK), `href="/schedules?workflow=probe"`) {
		t.Error("the workflow page does not link to its schedules' page")
	}
	if only := alice.page("/schedules?workflow=nosuch", http.StatusOK); strings.Contains(only, "data-schedule=") || !strings.Contains(only, "No schedules of nosuch") {
		t.Error("the schedules of a workflow without any")
	}
	carol := b.as("carol", "lorac").page("/schedules", http.StatusOK)
	if !strings.Contains(carol, `data-schedule="probe/hourly"`) || strings.Contains(carol, "s0000") {
		t.Error("carol's schedules page shows other tenants' schedules")
	}
	bob := b.as("bob", "bob").page("/schedules", http.StatusOK)
	if strings.Contains(bob, `method="post"`) {
		t.Error("a read-only user's schedules page offers actions")
	}
}

// rowOf is the table row of page that holds attr.
func rowOf(t *testing.T, page, attr string) string {
	t.Helper()
	i := strings.Index(page, attr)
	if i < 0 {
		t.Fatalf("no row %s", attr)
	}
	return page[i : i+strings.Index(page[i:], "</tr>")]
}
