package dashboard_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	"github.com/effectivelabs/trellis/testdata/acceptance"
	"github.com/google/uuid"
)

// What a newcomer looks for: which runs failed, at which step, with what
// error, on every page that lists them.
func TestPagesShowFailures(t *testing.T) {
	b := setup(t, dashboard.Options{})
	ok := b.trigger(`{"note":"fine","amount":5}`, runtime.WithTenant("acme"))
	b.h.Advance(time.Second) // its cool-off ends: it completes
	bad := b.failed(`{"note":"expired card","amount":7}`, runtime.WithTenant("globex"), runtime.WithIdempotencyKey("order-9"))

	overview := b.page("/", http.StatusOK)
	for _, want := range []string{bad.String(), "charge", "card declined: expired card", `id="failed-tile"><span class="n">1</span>`} {
		if !strings.Contains(overview, want) {
			t.Errorf("the overview does not show %q", want)
		}
	}

	list := b.page("/runs?status=FAILED&since=1h", http.StatusOK)
	if !strings.Contains(list, bad.String()) || strings.Contains(list, ok.String()) {
		t.Errorf("failed runs of the last hour: want run %s only", bad)
	}
	if !strings.Contains(list, "card declined: expired card") {
		t.Error("the runs list does not show the failure's error")
	}
	for path, want := range map[string]string{
		"/runs?tenant=acme":                             ok.String(),
		"/runs?key=order-9":                             bad.String(),
		"/runs?workflow=probe":                          ok.String(),
		`/runs?workflow=probe&where=input.amount+%3E+6`: bad.String(),
	} {
		if body := b.page(path, http.StatusOK); !strings.Contains(body, want) {
			t.Errorf("%s does not list run %s", path, want)
		}
	}
	if body := b.page(`/runs?workflow=probe&where=input.amount+%3E+6`, http.StatusOK); strings.Contains(body, ok.String()) {
		t.Errorf("where input.amount > 6 lists run %s, whose amount is 5", ok)
	}

	run := b.page("/runs/"+bad.String(), http.StatusOK)
	for _, want := range []string{
		`class="node k-step s-failed" data-step="charge"`, // the failed step, highlighted in the DAG
		`class="node k-step s-completed" data-step="fetch"`,
		`class="node k-sleep s-cancelled" data-step="cool-off"`,
		`class="node k-handler s-completed" data-step="alert"`,
		`<a href="#step-1">`, // the node links to its step's details
		`<details class="step s-failed" id="step-1" open>`, // which are open
		"card declined: expired card",
		`id="retry"`, // and the run can be retried
		"&#34;amount&#34;: 7",
		"span k-running o-failed", // a failed attempt on the timeline
	} {
		if !strings.Contains(run, want) {
			t.Errorf("the failed run's page does not contain %q", want)
		}
	}
	if strings.Contains(run, `id="cancel"`) {
		t.Error("a failed run's page offers to cancel it")
	}

	workflow := b.page("/workflows/probe", http.StatusOK)
	for _, want := range []string{"50.0%", `<td class="step-name">charge</td><td class="num">1</td>`, "skip if input.amount &lt; 0", "sleep 1s"} {
		if !strings.Contains(workflow, want) {
			t.Errorf("the workflow page does not show %q", want)
		}
	}
	if body := b.page("/workflows", http.StatusOK); !strings.Contains(body, "50.0%") || !strings.Contains(body, "Echoes its input") {
		t.Error("the workflows list does not show probe's failure rate and description")
	}
}

func TestRunningRunAndQueue(t *testing.T) {
	b := setup(t, dashboard.Options{})
	ref, err := b.workflow.Trigger(t.Context(), []byte(`{"note":"queued"}`), runtime.WithTenant("initech"))
	if err != nil {
		t.Fatal(err)
	}
	b.h.Clock.Advance(3 * time.Minute) // queued, and nothing claims it
	overview := b.page("/", http.StatusOK)
	for _, want := range []string{">initech</a>", "3m00s", `id="running-now">1<`} {
		if !strings.Contains(overview, want) {
			t.Errorf("the overview does not show %q of the queued run", want)
		}
	}
	run := b.page("/runs/"+ref.ID.String(), http.StatusOK)
	if !strings.Contains(run, `id="cancel"`) || strings.Contains(run, `id="retry"`) {
		t.Error("a running run's page should offer cancel, not retry")
	}
	if !strings.Contains(run, `class="node k-step s-queued" data-step="fetch"`) {
		t.Error("the running run's DAG does not show fetch queued")
	}
	// No worker announced probe's version (the test's engine is driven,
	// not started): the queue page says its task is unserved, and why.
	version := b.workflow.Definition().Version()
	queue := b.page("/queue", http.StatusOK)
	for _, want := range []string{`id="queue-unserved"`, `data-unserved="` + version + `"`, "no worker serves version " + version} {
		if !strings.Contains(queue, want) {
			t.Errorf("the queue page does not show %q of the unserved task", want)
		}
	}
	if err := b.h.Store.AnnounceWorker(t.Context(), "worker", []string{version}, nil, b.h.Now()); err != nil {
		t.Fatal(err)
	}
	if queue := b.page("/queue", http.StatusOK); strings.Contains(queue, `id="queue-unserved"`) {
		t.Error("the queue page shows unserved work once a live worker serves its version")
	}
}

// TestOverviewShowsStuckRuns checks that a run making no progress shows
// among the overview's stuck runs, with the step holding it up, to the
// users of its tenant only.
func TestOverviewShowsStuckRuns(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate},
		trellistest.WithConfig(func(c *runtime.Config) { c.StuckAfter = time.Minute }))
	if _, err := b.workflow.Trigger(t.Context(), []byte(`{"note":"queued"}`), runtime.WithTenant("initech")); err != nil {
		t.Fatal(err)
	}
	b.h.Clock.Advance(3 * time.Minute) // queued, and nothing claims it
	stuck := `<span class="step-name">fetch</span>`
	if overview := b.as("alice", "ecila").page("/", http.StatusOK); !strings.Contains(overview, stuck) {
		t.Errorf("the overview does not show fetch holding up the stuck run:\n%s", overview)
	}
	if overview := b.as("carol", "lorac").page("/", http.StatusOK); strings.Contains(overview, stuck) {
		t.Error("the overview shows another tenant's stuck run")
	}
}

// Parameters the pages cannot use answer 400, saying which one and why.
func TestBadParameters(t *testing.T) {
	b := setup(t, dashboard.Options{})
	b.trigger(`{"note":"x"}`)
	tests := []struct {
		path string
		code int
		want []string
	}{
		{"/runs?status=DONE", 400, []string{"<strong>status</strong>", "unknown run status &#34;DONE&#34;"}},
		{"/runs?since=yesterday", 400, []string{"<strong>since</strong>", "is not a time"}},
		{"/runs?since=2030-01-02&until=2030-01-01", 400, []string{"<strong>until</strong>", "time range is empty"}},
		{"/runs?limit=5000", 400, []string{"<strong>limit</strong>", "from 1 to 1000"}},
		{"/runs?after=nope", 400, []string{"<strong>after</strong>", "not a page cursor"}},
		{"/runs?where=input.amount+%3E+1", 400, []string{"<strong>where</strong>", "choose a workflow"}},
		{"/runs?workflow=nope&where=input.amount+%3E+1", 400, []string{"<strong>workflow</strong>", "no run of workflow"}},
		{"/runs?workflow=probe&where=input.amont+%3E+1", 400, []string{"<strong>where</strong>", "does not type-check", "undefined field", "amont", "did you mean &#34;amount&#34;?"}},
		{"/runs?workflow=probe&where=input.amount+%3E", 400, []string{"<strong>where</strong>", "does not type-check"}},
		{"/runs/not-a-run", 400, []string{"run id", "is not a run id"}},
		{"/runs/01950000-0000-7000-8000-000000000000", 404, []string{"There is no run"}},
		{"/workflows/probe?version=probe@nope", 400, []string{"version", "is not a version of probe"}},
		{"/workflows/nope", 404, []string{"no version of a workflow"}},
		{"/nope", 404, []string{"There is no page"}},
		{"/assets/nope.js", 404, []string{"There is no asset"}},
	}
	for _, tt := range tests {
		code, body := b.get(tt.path)
		if code != tt.code {
			t.Errorf("GET %s = %d, want %d", tt.path, code, tt.code)
		}
		for _, want := range tt.want {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s does not say %q; body:\n%s", tt.path, want, body)
			}
		}
	}
	// The form keeps what was typed, and marks the wrong field.
	if body := b.page("/runs?workflow=probe&where=input.amont+%3E+1", 400); !strings.Contains(body, `value="input.amont &gt; 1"`) || !strings.Contains(body, `aria-invalid="true"`) {
		t.Error("the runs form does not show the rejected condition marked invalid")
	}
}

func TestPaging(t *testing.T) {
	b := setup(t, dashboard.Options{})
	var ids []runtime.RunID
	for range 5 {
		ids = append(ids, b.trigger(`{}`))
		b.h.Clock.Advance(time.Second)
	}
	first := b.page("/runs?limit=2", http.StatusOK)
	if !strings.Contains(first, ids[4].String()) || !strings.Contains(first, ids[3].String()) || strings.Contains(first, ids[2].String()) {
		t.Fatal("the first page of two does not hold the two newest runs")
	}
	next := between(first, `<a href="`, `" id="next-page"`)
	if next == "" {
		t.Fatal("the first page has no link to the next")
	}
	second := b.page(strings.TrimPrefix(strings.ReplaceAll(next, "&amp;", "&"), ""), http.StatusOK)
	if !strings.Contains(second, ids[2].String()) || !strings.Contains(second, ids[1].String()) || strings.Contains(second, ids[4].String()) {
		t.Error("the second page does not hold the next two runs")
	}
	if !strings.Contains(second, "First page") {
		t.Error("the second page has no link back to the first")
	}
}

// between returns the text of s between the first before and the after
// that follows it.
func between(s, before, after string) string {
	j := strings.Index(s, after)
	if j < 0 {
		return ""
	}
	i := strings.LastIndex(s[:j], before)
	if i < 0 {
		return ""
	}
	return s[i+len(before) : j]
}

func TestDownloadsWholeDocuments(t *testing.T) {
	b := setup(t, dashboard.Options{})
	id := b.trigger(`{"note":"whole"}`)
	resp, err := b.client.Get(b.base + "/runs/" + id.String() + "/input.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("input.json served as %q, %q; want an application/json attachment", ct, resp.Header.Get("Content-Disposition"))
	}
	if code, body := b.get("/runs/" + id.String() + "/steps/fetch/output.json"); code != 200 || body != `{"note":"whole"}` {
		t.Errorf("fetch's output.json = %d %q", code, body)
	}
	if code, _ := b.get("/runs/" + id.String() + "/steps/nope/output.json"); code != 404 {
		t.Errorf("an unknown step's output.json = %d, want 404", code)
	}
}

// A workflow's page lists its schedules, those created at run time with
// whether they are paused; their inputs are shown as text, not markup.
func TestWorkflowPageShowsSchedules(t *testing.T) {
	b := setup(t, dashboard.Options{})
	b.trigger(`{"note":"fine","amount":5}`)
	ctx := t.Context()
	if _, err := b.workflow.CreateSchedule(ctx, "nightly", "0 3 * * *", []byte(`{"note":"<script>alert(1)</script>","amount":1}`),
		runtime.WithTimezone("Europe/Amsterdam"), runtime.WithScheduleTenant("acme")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.workflow.CreateSchedule(ctx, "hourly", "@hourly", []byte(`{"note":"h","amount":2}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.h.Engine.PauseSchedule(ctx, "probe", "hourly"); err != nil {
		t.Fatal(err)
	}
	page := b.page("/workflows/probe", http.StatusOK)
	for _, want := range []string{
		`<tr data-schedule="hourly"><td class="step-name">hourly</td><td class="mono">@hourly</td><td>UTC</td><td>default</td>`,
		`<tr data-schedule="nightly"><td class="step-name">nightly</td><td class="mono">0 3 * * *</td><td>Europe/Amsterdam</td><td>acme</td>`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`<span class="badge s-cancelled">paused</span>`,
		"created at run time",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the workflow page does not contain %q", want)
		}
	}
	if strings.Contains(page, "<script>alert(1)") {
		t.Error("a schedule's input is rendered as markup")
	}
	if strings.Count(page, "paused</span>") != 1 {
		t.Error("want exactly one schedule marked paused")
	}
}

// The overview's "failed in the last hour" counts runs by when they
// failed, and the list its tile links to shows the same runs: one
// created two hours ago that failed just now too.
func TestFailedInTheLastHourListsWhatTheTileCounts(t *testing.T) {
	b := setup(t, dashboard.Options{})
	ref, err := b.workflow.Trigger(t.Context(), []byte(`{"note":"slow to fail","amount":3}`))
	if err != nil {
		t.Fatal(err)
	}
	old := ref.ID
	b.h.Clock.Set(b.h.Clock.Now().Add(2 * time.Hour)) // nothing ran meanwhile
	recent := b.failed(`{"note":"fails at once","amount":4}`)
	if st := b.h.Result(old).Status; st != runtime.RunFailed {
		t.Fatalf("the old run is %s, want FAILED", st)
	}
	// The tile counts from the start of its first minute; it links to the
	// runs that failed since then.
	overview := b.page("/", http.StatusOK)
	m := regexp.MustCompile(`href="(/runs\?status=FAILED&amp;finished=[^"]+)" id="failed-tile"><span class="n">(\d+)</span>`).FindStringSubmatch(overview)
	if len(m) < 3 || m[2] != "2" {
		t.Fatalf("the overview's failed tile does not count 2 runs and link to the runs that failed since its window began: %v", m)
	}
	list := b.page(html.UnescapeString(m[1]), http.StatusOK)
	for _, id := range []runtime.RunID{old, recent} {
		if !strings.Contains(list, id.String()) {
			t.Errorf("the runs that failed in the last hour leave out %s", id)
		}
	}
	if !strings.Contains(list, "finished since") {
		t.Error("the list does not say it shows runs by when they finished")
	}
	if created := b.page("/runs?status=FAILED&since=1h", http.StatusOK); strings.Contains(created, old.String()) {
		t.Errorf("runs created in the last hour list %s, created two hours ago", old)
	}
	if code, body := b.get("/runs?finished=yesterday-ish"); code != http.StatusBadRequest || !strings.Contains(body, "finished") {
		t.Errorf("a bad finished parameter answered %d, want 400 naming it", code)
	}
}

// A schedule created at run time is paused, resumed and deleted from its
// workflow's page, confirmed and with the page's token; a read-only
// dashboard offers and accepts none of it.
func TestScheduleActions(t *testing.T) {
	b := setup(t, dashboard.Options{})
	b.trigger(`{"note":"fine","amount":5}`)
	ctx := t.Context()
	if _, err := b.workflow.CreateSchedule(ctx, "nightly", "0 3 * * *", []byte(`{"note":"n","amount":1}`)); err != nil {
		t.Fatal(err)
	}
	page := b.page("/workflows/probe", http.StatusOK)
	if !strings.Contains(page, `action="/workflows/probe/schedules/nightly/pause"`) || !strings.Contains(page, `action="/workflows/probe/schedules/nightly/delete"`) {
		t.Fatal("the workflow page offers no pause and delete for a schedule created at run time")
	}
	paused := func() bool {
		t.Helper()
		list, err := b.h.Engine.Schedules(ctx, "probe")
		if err != nil || len(list) != 1 {
			t.Fatalf("schedules = %v, %v", list, err)
		}
		return list[0].Paused
	}
	if code, _, _ := b.post("/workflows/probe/schedules/nightly/pause", url.Values{"confirm": {"yes"}}, nil); code != http.StatusForbidden || paused() {
		t.Errorf("a pause without the page's token answered %d; want 403 and the schedule active", code)
	}
	token := b.token("/workflows/probe")
	if code, _, body := b.post("/workflows/probe/schedules/nightly/pause", url.Values{"csrf": {token}}, nil); code != http.StatusOK || !strings.Contains(body, "Pause schedule?") || paused() {
		t.Errorf("an unconfirmed pause answered %d; want the confirmation and the schedule active", code)
	}
	code, location, _ := b.post("/workflows/probe/schedules/nightly/pause", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil)
	if code != http.StatusSeeOther || location != "/workflows/probe?done=pause" || !paused() {
		t.Fatalf("a confirmed pause answered %d to %q; want 303 to the workflow and the schedule paused", code, location)
	}
	if page := b.page(location, http.StatusOK); !strings.Contains(page, "Paused: the schedule starts no run") || !strings.Contains(page, `schedules/nightly/resume"`) {
		t.Error("after pausing, the workflow page does not say so and offer to resume")
	}
	if code, _, _ := b.post("/workflows/probe/schedules/nightly/resume", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusSeeOther || paused() {
		t.Errorf("a confirmed resume answered %d; want 303 and the schedule active", code)
	}
	if code, body := b.get("/workflows/probe/schedules/nightly/delete"); code != http.StatusOK || !strings.Contains(body, "Delete schedule?") {
		t.Errorf("the delete confirmation page answered %d", code)
	}
	if code, _, _ := b.post("/workflows/probe/schedules/nightly/delete", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusSeeOther {
		t.Errorf("a confirmed delete answered %d, want 303", code)
	}
	if list, err := b.h.Engine.Schedules(ctx, "probe"); err != nil || len(list) != 0 {
		t.Errorf("after delete, schedules = %v, %v; want none", list, err)
	}
	if code, _, _ := b.post("/workflows/probe/schedules/nightly/delete", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusNotFound {
		t.Errorf("deleting a schedule that is gone answered %d, want 404", code)
	}
	if code, _, _ := b.post("/workflows/probe/schedules/nightly/explode", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusNotFound {
		t.Errorf("an unknown schedule action answered %d, want 404", code)
	}

	ro := setup(t, dashboard.Options{ReadOnly: true})
	ro.trigger(`{"note":"fine","amount":5}`)
	if _, err := ro.workflow.CreateSchedule(ctx, "nightly", "0 3 * * *", []byte(`{"note":"n","amount":1}`)); err != nil {
		t.Fatal(err)
	}
	if page := ro.page("/workflows/probe", http.StatusOK); strings.Contains(page, "/schedules/nightly/pause") {
		t.Error("a read-only dashboard offers to pause a schedule")
	}
	if code, _, _ := ro.post("/workflows/probe/schedules/nightly/pause", url.Values{"confirm": {"yes"}}, nil); code != http.StatusForbidden {
		t.Errorf("a read-only dashboard answered a pause %d, want 403", code)
	}
}

// TestOverviewWorkerStates checks that the overview calls a worker that
// stopped heartbeating by the word trellis workers uses.
func TestOverviewWorkerStates(t *testing.T) {
	b := setup(t, dashboard.Options{})
	ctx, s, now := t.Context(), b.h.Store, b.h.Now()
	if _, err := s.Heartbeat(ctx, "worker-quiet", now.Add(-10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	overview := b.page("/", http.StatusOK)
	row := regexp.MustCompile(`(?s)worker-quiet</td>\s*<td><span class="badge s-failed"[^>]*>([a-z]+)</span>`).FindStringSubmatch(overview)
	if len(row) < 2 || row[1] != string(store.WorkerSilent) {
		t.Errorf("the overview does not show worker-quiet as %q:\n%s", store.WorkerSilent, overview)
	}
}

// A workflow's page lists the events that start it, with their filters
// and the input they build, as text.
func TestWorkflowPageShowsStartEvents(t *testing.T) {
	b := setup(t, dashboard.Options{})
	b.trigger(`{"note":"fine","amount":5}`)
	if _, err := acceptance.RegisterBigOrders(b.h.Engine, bigOrders{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.h.Engine.PublishEvent(t.Context(), "order-placed", "e-1", []byte(`{"id":"o-1","total":500}`)); err != nil {
		t.Fatal(err)
	}
	page := b.page("/workflows/big-orders", http.StatusOK)
	for _, want := range []string{
		`<h2>Started by events</h2>`,
		`<tr data-event="order-placed"><td class="step-name">order-placed</td><td class="mono">payload.total &gt; 100</td>`,
		`orderId: payload.id<br>total: payload.total<br>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the workflow page does not contain %q", want)
		}
	}
	if page := b.page("/workflows/probe", http.StatusOK); strings.Contains(page, "Started by events") {
		t.Error("the page of a workflow no event starts has a Started by events section")
	}
}

type bigOrders struct{}

func (bigOrders) Review(context.Context, acceptance.BigOrdersInput) (acceptance.BigOrdersReviewOutput, error) {
	return acceptance.BigOrdersReviewOutput{Note: "ok"}, nil
}

// TestRunPageShowsTags: a run's page lists its tags, by key, escaped.
func TestRunPageShowsTags(t *testing.T) {
	b := setup(t, dashboard.Options{})
	ref, err := b.workflow.Trigger(t.Context(), []byte(`{"note":"tagged"}`), runtime.WithTags(map[string]string{"customer": "<b>acme</b>", "channel": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	run := b.page("/runs/"+ref.ID.String(), http.StatusOK)
	want := `<dd id="tags"><span class="mono tag">channel=web</span> <span class="mono tag">customer=&lt;b&gt;acme&lt;/b&gt;</span> </dd>`
	if !strings.Contains(run, want) {
		t.Errorf("the run page does not show the tags as %s", want)
	}
	plain, err := b.workflow.Trigger(t.Context(), []byte(`{"note":"plain"}`))
	if err != nil {
		t.Fatal(err)
	}
	if page := b.page("/runs/"+plain.ID.String(), http.StatusOK); strings.Contains(page, `id="tags"`) {
		t.Error("the page of a run without tags shows tags")
	}
}

// TestRunsListByTag: the runs list keeps the runs carrying the tags of
// its tag fields, and names a tag field it cannot use.
func TestRunsListByTag(t *testing.T) {
	b := setup(t, dashboard.Options{})
	acme, err := b.workflow.Trigger(t.Context(), []byte(`{"note":"a"}`), runtime.WithTag("customer", "acme"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.workflow.Trigger(t.Context(), []byte(`{"note":"b"}`))
	if err != nil {
		t.Fatal(err)
	}
	page := b.page("/runs?tag=customer%3Dacme&tag=", http.StatusOK)
	if !strings.Contains(page, acme.ID.String()) || strings.Contains(page, other.ID.String()) {
		t.Error("the runs list by tag customer=acme does not show just the tagged run")
	}
	if !strings.Contains(page, `value="customer=acme"`) || !strings.Contains(page, "tagged customer=acme") {
		t.Error("the runs list does not show the tag it filters by")
	}
	for q, want := range map[string]string{
		"tag=customer":        `&#34;customer&#34;: give one key=value`,
		"tag=Customer%3Dacme": `tag key &#34;Customer&#34; has &#34;C&#34; at byte 0`,
		"tag=a%3D1&tag=a%3D2": `give one key=value a tag field`,
	} {
		body := b.page("/runs?"+q, http.StatusBadRequest)
		if !strings.Contains(body, "The <strong>tag</strong> filter cannot be used") || !strings.Contains(body, want) {
			t.Errorf("/runs?%s does not name the tag field's problem %s", q, want)
		}
	}
}

// TestBrowserWorkflowStartEvents: from the workflows list a user opens a
// workflow that events start, reads the events, filters and inputs that
// start it, and finds the run a published event started.
func TestBrowserWorkflowStartEvents(t *testing.T) {
	b := setup(t, dashboard.Options{})
	ctx := browser(t, 1280, 900)
	if _, err := acceptance.RegisterBigOrders(b.h.Engine, bigOrders{}); err != nil {
		t.Fatal(err)
	}
	pub, err := b.h.Engine.PublishEvent(t.Context(), "order-placed", "e-1", []byte(`{"id":"o-1","total":500}`))
	if err != nil || len(pub.Listeners) != 1 || pub.Listeners[0].Run == uuid.Nil {
		t.Fatalf("publishing order-placed: %+v, %v; want one run started", pub, err)
	}
	started := pub.Listeners[0].Run.String()
	var starts, runs string
	err = runStable(ctx,
		chromedp.Navigate(b.base+"/workflows"),
		chromedp.Click(`a[href$="/workflows/big-orders"]`),
		chromedp.WaitVisible(`tr[data-event="order-placed"]`),
		chromedp.Text(`tr[data-event="order-placed"]`, &starts),
		chromedp.Navigate(b.base+"/runs?workflow=big-orders"),
		chromedp.WaitVisible(`table.runs`),
		chromedp.Evaluate(`document.querySelector("table.runs").innerText`, &runs),
	)
	if err != nil {
		t.Fatalf("opening the workflow's page: %v", err)
	}
	for _, want := range []string{"order-placed", "payload.total > 100", "orderId: payload.id"} {
		if !strings.Contains(starts, want) {
			t.Errorf("the workflow page's start events say %q, want %q", starts, want)
		}
	}
	if !strings.Contains(runs, started) {
		t.Errorf("the runs of big-orders do not list the run the event started (%s):\n%s", started, runs)
	}
}
