package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/effectivelabs/trellis/runtime"
)

// Pausing and resuming a workflow from its page (Engine.PauseWorkflow).
// A user who sees every tenant pauses the workflow for every tenant, or
// for the tenant the form names; a user who sees only some tenants
// pauses and resumes it for those only, and cannot lift a pause of every
// tenant.

// workflowPauseAction is pause or resume.
type workflowPauseAction struct {
	Name, Verb, Question, Done string
	do                         func(ctx context.Context, e *runtime.Engine, workflow string, tenants []string) error
}

func workflowPauseNamed(name string) (workflowPauseAction, bool) {
	switch name {
	case "pause":
		return workflowPauseAction{Name: name, Verb: "Pause workflow",
			Question: "Pause this workflow? No worker claims a task of its runs until it is resumed: running steps finish, new runs are created and wait, timers fire and what they make ready waits.",
			Done:     "Paused: no task of the workflow is claimed until it is resumed.",
			do: func(ctx context.Context, e *runtime.Engine, workflow string, tenants []string) error {
				_, err := e.PauseWorkflow(ctx, workflow, tenants...)
				return err
			}}, true
	case "resume":
		return workflowPauseAction{Name: name, Verb: "Resume workflow",
			Question: "Resume this workflow? The tasks its pause held are claimed at once, in the queue's usual order.",
			Done:     "Resumed: the tasks the pause held are claimed again.",
			do: func(ctx context.Context, e *runtime.Engine, workflow string, tenants []string) error {
				_, err := e.ResumeWorkflow(ctx, workflow, tenants...)
				return err
			}}, true
	}
	return workflowPauseAction{}, false
}

// workflowPauseNotice is what a workflow's page says after a pause or a
// resume, by the done value the redirect names (workflow-pause, ...).
func workflowPauseNotice(done string) string {
	if a, ok := workflowPauseNamed(strings.TrimPrefix(done, "workflow-")); ok && strings.HasPrefix(done, "workflow-") {
		return a.Done
	}
	return ""
}

// pauseTenants returns the tenants a pause or resume by u is for: the
// form's tenant, if any, which u must see; else every tenant for a user
// who sees them all, and u's tenants for one who does not. It reports
// false for a tenant u does not see.
func pauseTenants(u User, tenant string) ([]string, bool) {
	switch {
	case tenant != "":
		return []string{tenant}, u.Sees(tenant)
	case u.Scoped():
		return slices.Clone(u.Tenants), true
	}
	return nil, true
}

func (d *Dashboard) workflowPauseConfirm(a workflowPauseAction, r *http.Request) confirmData {
	workflow := r.PathValue("name")
	post := "/workflows/" + url.PathEscape(workflow) + "/" + a.Name
	label := workflow
	if tenant := r.FormValue("tenant"); tenant != "" {
		post += "?" + url.Values{"tenant": {tenant}}.Encode()
		label += " (tenant " + tenant + ")"
	}
	return confirmData{Verb: a.Verb, Question: a.Question, Kind: "Workflow", Label: label,
		Back: "/workflows/" + url.PathEscape(workflow), Post: post}
}

// workflowPauseAllowed returns the action the request's path names and
// the tenants it is for, or answers 404, or 403 on a read-only
// dashboard; a tenant the user does not see answers 404.
func (d *Dashboard) workflowPauseAllowed(w http.ResponseWriter, r *http.Request) (workflowPauseAction, []string, bool) {
	a, ok := workflowPauseNamed(r.PathValue("action"))
	if !d.mayAct(w, r, ok, "page", "it does not pause or resume workflows") {
		return a, nil, false
	}
	tenants, ok := pauseTenants(userOf(r), r.FormValue("tenant"))
	if !ok {
		d.errorPage(w, r, http.StatusNotFound, "There is no tenant "+r.FormValue("tenant")+" for you to "+a.Name+".")
		return a, nil, false
	}
	return a, tenants, true
}

// confirmWorkflowPause shows the confirmation of a pause or resume.
func (d *Dashboard) confirmWorkflowPause(w http.ResponseWriter, r *http.Request) {
	a, _, ok := d.workflowPauseAllowed(w, r)
	if !ok {
		return
	}
	d.render(w, r, http.StatusOK, "confirm", d.newPage(w, r, "workflows", a.Verb, d.workflowPauseConfirm(a, r)))
}

// actWorkflowPause pauses or resumes a workflow, once the request proves
// it comes from a page of this dashboard and was confirmed, then shows
// the workflow.
func (d *Dashboard) actWorkflowPause(w http.ResponseWriter, r *http.Request) {
	a, tenants, ok := d.workflowPauseAllowed(w, r)
	if !ok || !d.confirmed(w, r, a.Name, "workflows", d.workflowPauseConfirm(a, r)) {
		return
	}
	workflow := r.PathValue("name")
	if err := a.do(r.Context(), d.admin.Engine(), workflow, tenants); err != nil {
		d.log.Error("dashboard: "+a.Name+" workflow failed", "workflow", workflow, "tenants", tenants, "err", err)
		d.errorPage(w, r, http.StatusInternalServerError, a.Verb+" failed: "+err.Error())
		return
	}
	d.log.Info("dashboard: "+a.Name+" workflow", "workflow", workflow, "tenants", tenants, "user", userOf(r).Name)
	http.Redirect(w, r, d.url("/workflows/"+url.PathEscape(workflow))+"?"+url.Values{"done": {"workflow-" + a.Name}}.Encode(), http.StatusSeeOther)
}

// visiblePauses are the pauses u sees: those of every tenant, which hold
// u's runs too, and those of u's tenants.
func visiblePauses(u User, pauses []runtime.WorkflowPause) []runtime.WorkflowPause {
	return slices.DeleteFunc(slices.Clone(pauses), func(p runtime.WorkflowPause) bool { return p.Tenant != "" && !u.Sees(p.Tenant) })
}
