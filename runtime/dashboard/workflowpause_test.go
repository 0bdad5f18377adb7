package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
)

// pausesOf renders the engine's pauses of probe as their tenants ("*"
// for every tenant).
func (b *bundle) pausesOf() []string {
	b.t.Helper()
	pauses, err := b.h.Engine.PausedWorkflows(b.t.Context())
	if err != nil {
		b.t.Fatal(err)
	}
	out := []string{}
	for _, p := range pauses {
		if p.Tenant == "" {
			p.Tenant = "*"
		}
		out = append(out, p.Tenant)
	}
	return out
}

// A workflow is paused and resumed from its page, confirmed and with the
// page's token; the pause shows on the workflow, the workflows list and
// the overview's queue; a read-only dashboard offers and accepts none of
// it.
func TestWorkflowPauseActions(t *testing.T) {
	b := setup(t, dashboard.Options{})
	b.trigger(`{"note":"fine","amount":5}`)
	page := b.page("/workflows/probe", http.StatusOK)
	if !strings.Contains(page, `action="/workflows/probe/pause"`) || strings.Contains(page, `data-paused="probe"`) {
		t.Fatal("the workflow page offers no pause, or shows the workflow paused")
	}
	if code, _, _ := b.post("/workflows/probe/pause", url.Values{"confirm": {"yes"}}, nil); code != http.StatusForbidden || len(b.pausesOf()) != 0 {
		t.Errorf("a pause without the page's token answered %d; want 403 and nothing paused", code)
	}
	token := b.token("/workflows/probe")
	if code, _, body := b.post("/workflows/probe/pause", url.Values{"csrf": {token}}, nil); code != http.StatusOK || !strings.Contains(body, "Pause workflow?") || len(b.pausesOf()) != 0 {
		t.Errorf("an unconfirmed pause answered %d; want the confirmation and nothing paused", code)
	}
	code, location, _ := b.post("/workflows/probe/pause", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil)
	if code != http.StatusSeeOther || location != "/workflows/probe?done=workflow-pause" || strings.Join(b.pausesOf(), ",") != "*" {
		t.Fatalf("a confirmed pause answered %d to %q, pauses %v; want 303 to the workflow and it paused for every tenant", code, location, b.pausesOf())
	}
	held := b.trigger(`{"note":"waits","amount":1}`)
	if st := b.h.Steps(held)["fetch"]; st != runtime.TaskQueued {
		t.Errorf("a run triggered while paused has its first step %s, want QUEUED", st)
	}
	page = b.page(location, http.StatusOK)
	for _, want := range []string{"Paused: no task of the workflow is claimed", `data-paused="probe"`, `<tr data-pause=""><td>every tenant</td>`, `action="/workflows/probe/resume"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the paused workflow's page does not contain %q", want)
		}
	}
	if strings.Contains(page, `action="/workflows/probe/pause"`) {
		t.Error("the page of a workflow paused for every tenant offers to pause it")
	}
	if list := b.page("/workflows", http.StatusOK); !strings.Contains(list, `data-paused="probe"`) {
		t.Error("the workflows list does not mark probe paused")
	}
	if queue := b.page("/queue", http.StatusOK); !strings.Contains(queue, `data-paused="probe">paused</span>`) || !strings.Contains(queue, "1 of paused workflows") {
		t.Error("the queue page does not mark probe paused with the task it holds")
	}
	if overview := b.page("/", http.StatusOK); !strings.Contains(overview, `data-paused="probe">probe paused</span>`) || !strings.Contains(overview, "(1 queued)") {
		t.Error("the overview's queue does not mark probe paused with the task it holds")
	}
	if code, _, _ := b.post("/workflows/probe/resume", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusSeeOther || len(b.pausesOf()) != 0 {
		t.Errorf("a confirmed resume answered %d, pauses %v; want 303 and nothing paused", code, b.pausesOf())
	}
	b.h.Settle()
	if st := b.h.Result(held).Status; st == runtime.RunRunning {
		t.Errorf("the held run is %s after the resume, want it ended", st)
	}
	// One tenant, named in the form.
	if code, _, _ := b.post("/workflows/probe/pause", url.Values{"csrf": {token}, "confirm": {"yes"}, "tenant": {"acme"}}, nil); code != http.StatusSeeOther || strings.Join(b.pausesOf(), ",") != "acme" {
		t.Errorf("a pause for acme answered %d, pauses %v; want 303 and acme paused", code, b.pausesOf())
	}
	if code, body := b.get("/workflows/probe/resume?tenant=acme"); code != http.StatusOK || !strings.Contains(body, "Resume workflow?") || !strings.Contains(body, `action="/workflows/probe/resume?tenant=acme"`) {
		t.Errorf("the resume confirmation for acme answered %d", code)
	}
	if code, _, _ := b.post("/workflows/probe/explode", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusNotFound {
		t.Errorf("an unknown workflow action answered %d, want 404", code)
	}

	ro := setup(t, dashboard.Options{ReadOnly: true})
	ro.trigger(`{"note":"fine","amount":5}`)
	if page := ro.page("/workflows/probe", http.StatusOK); strings.Contains(page, "/workflows/probe/pause") {
		t.Error("a read-only dashboard offers to pause a workflow")
	}
	if code, _, _ := ro.post("/workflows/probe/pause", url.Values{"confirm": {"yes"}}, nil); code != http.StatusForbidden || len(ro.pausesOf()) != 0 {
		t.Errorf("a read-only dashboard answered a pause %d, want 403", code)
	}
}

// A user who sees only some tenants pauses and resumes a workflow for
// those only: never another tenant, and never every tenant.
func TestWorkflowPauseTenantScope(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate})
	b.trigger(`{"note":"acme's"}`, runtime.WithTenant("acme"))
	carol, dave := b.as("carol", "lorac"), b.as("dave", "evad") // acme's operator; read-only
	page := carol.page("/workflows/probe", http.StatusOK)
	if !strings.Contains(page, `action="/workflows/probe/pause"`) || strings.Contains(page, `name="tenant" placeholder`) {
		t.Error("carol's workflow page does not offer to pause for her tenant only")
	}
	token := carol.token("/workflows/probe")
	if code, _, _ := carol.post("/workflows/probe/pause", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusSeeOther || strings.Join(b.pausesOf(), ",") != "acme" {
		t.Fatalf("carol's pause answered %d, pauses %v; want 303 and acme paused only", code, b.pausesOf())
	}
	if code, _, _ := carol.post("/workflows/probe/pause", url.Values{"csrf": {token}, "confirm": {"yes"}, "tenant": {"globex"}}, nil); code != http.StatusNotFound || strings.Join(b.pausesOf(), ",") != "acme" {
		t.Errorf("carol's pause for globex answered %d, pauses %v; want 404 and globex not paused", code, b.pausesOf())
	}
	if _, err := b.h.Engine.PauseWorkflow(t.Context(), "probe"); err != nil {
		t.Fatal(err)
	}
	page = carol.page("/workflows/probe", http.StatusOK)
	if !strings.Contains(page, `<tr data-pause=""><td>every tenant</td>`) || strings.Count(page, `action="/workflows/probe/resume"`) != 1 {
		t.Error("carol's page does not show the pause of every tenant, or offers to lift it")
	}
	if code, _, _ := carol.post("/workflows/probe/resume", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusSeeOther || strings.Join(b.pausesOf(), ",") != "*" {
		t.Errorf("carol's resume answered %d, pauses %v; want 303 and only the pause of every tenant left", code, b.pausesOf())
	}
	if code, _, _ := dave.post("/workflows/probe/resume", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusForbidden {
		t.Errorf("a read-only user's resume answered %d, want 403", code)
	}
}
