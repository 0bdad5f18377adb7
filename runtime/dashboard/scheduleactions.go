package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// A scheduleAction is what a workflow's page can do to one of its
// schedules created at run time (those of the workflow file change with
// the file).
type scheduleAction struct {
	Name string // the path's last element: pause, resume or delete
	// Verb and Question are what the confirmation says; Done what the
	// workflow's page says afterwards.
	Verb, Question, Done string
	do                   func(ctx context.Context, a *ops.Admin, workflow, name string) error
}

func scheduleActionNamed(name string) (scheduleAction, bool) {
	switch name {
	case "pause":
		return scheduleAction{Name: name, Verb: "Pause schedule", Done: "Paused: the schedule starts no run until it is resumed.",
			Question: "Pause this schedule? It starts no run until it is resumed; the ticks that pass meanwhile are skipped.",
			do: func(ctx context.Context, a *ops.Admin, workflow, name string) error {
				_, err := a.Engine().PauseSchedule(ctx, workflow, name)
				return err
			}}, true
	case "resume":
		return scheduleAction{Name: name, Verb: "Resume schedule", Done: "Resumed: the schedule's next tick starts a run.",
			Question: "Resume this schedule? Its next tick starts a run; the ticks that passed while it was paused are not made up.",
			do: func(ctx context.Context, a *ops.Admin, workflow, name string) error {
				_, err := a.Engine().ResumeSchedule(ctx, workflow, name)
				return err
			}}, true
	case "delete":
		return scheduleAction{Name: name, Verb: "Delete schedule", Done: "Deleted: the schedule starts no more runs; the runs it started are kept.",
			Question: "Delete this schedule? It starts no more runs; the runs it started are kept.",
			do: func(ctx context.Context, a *ops.Admin, workflow, name string) error {
				return a.Engine().DeleteSchedule(ctx, workflow, name)
			}}, true
	}
	return scheduleAction{}, false
}

// scheduleNotice is what a workflow's page says after a schedule action,
// by the action the redirect names.
func scheduleNotice(done string) string {
	if a, ok := scheduleActionNamed(done); ok {
		return a.Done
	}
	return ""
}

// scheduleAllowed returns the action the request's path names, or
// answers 404 or, on a read-only dashboard, 403.
func (d *Dashboard) scheduleAllowed(w http.ResponseWriter, r *http.Request) (scheduleAction, bool) {
	a, ok := scheduleActionNamed(r.PathValue("action"))
	if !d.mayAct(w, r, ok, "page", "it does not change schedules") {
		return a, false
	}
	return a, d.scheduleVisible(w, r)
}

// scheduleVisible answers 404, and reports false, for a schedule of a
// tenant the user does not see (a user who sees every tenant goes on,
// and the action itself says whether the schedule exists).
func (d *Dashboard) scheduleVisible(w http.ResponseWriter, r *http.Request) bool {
	u := userOf(r)
	if !u.Scoped() {
		return true
	}
	workflow, name := r.PathValue("name"), r.PathValue("schedule")
	schedules, err := d.admin.Schedules(r.Context(), workflow)
	if err != nil {
		d.errorPage(w, r, http.StatusInternalServerError, d.problem("listing the schedules of "+workflow, err))
		return false
	}
	for _, s := range schedules {
		if s.Name == name && u.Sees(s.Tenant) {
			return true
		}
	}
	d.errorPage(w, r, http.StatusNotFound, "Workflow "+workflow+" has no schedule "+name+" created at run time.")
	return false
}

func (d *Dashboard) scheduleConfirm(a scheduleAction, r *http.Request) confirmData {
	workflow, name := r.PathValue("name"), r.PathValue("schedule")
	return confirmData{Verb: a.Verb, Question: a.Question, Kind: "Schedule " + name + " of workflow", Label: workflow,
		Back: "/workflows/" + url.PathEscape(workflow),
		Post: "/workflows/" + url.PathEscape(workflow) + "/schedules/" + url.PathEscape(name) + "/" + a.Name}
}

// confirmSchedule shows the confirmation of a schedule action: what a
// browser without the page script, or a link, comes to.
func (d *Dashboard) confirmSchedule(w http.ResponseWriter, r *http.Request) {
	a, ok := d.scheduleAllowed(w, r)
	if !ok {
		return
	}
	d.render(w, r, http.StatusOK, "confirm", d.newPage(w, r, "workflows", a.Verb, d.scheduleConfirm(a, r)))
}

// actSchedule pauses, resumes or deletes a schedule created at run time,
// once the request proves it comes from a page of this dashboard and was
// confirmed, then shows the workflow.
func (d *Dashboard) actSchedule(w http.ResponseWriter, r *http.Request) {
	a, ok := d.scheduleAllowed(w, r)
	if !ok || !d.confirmed(w, r, a.Name, "workflows", d.scheduleConfirm(a, r)) {
		return
	}
	workflow, name := r.PathValue("name"), r.PathValue("schedule")
	if err := a.do(r.Context(), d.admin, workflow, name); err != nil {
		if errors.Is(err, runtime.ErrScheduleNotFound) {
			d.errorPage(w, r, http.StatusNotFound, "Workflow "+workflow+" has no schedule "+name+" created at run time.")
			return
		}
		d.log.Error("dashboard: "+a.Name+" schedule failed", "workflow", workflow, "schedule", name, "err", err)
		d.errorPage(w, r, http.StatusInternalServerError, a.Verb+" failed: "+err.Error())
		return
	}
	d.log.Info("dashboard: "+a.Name+" schedule", "workflow", workflow, "schedule", name, "user", userOf(r).Name)
	if r.PostFormValue("from") == "schedules" { // the schedules page's buttons go back to it
		http.Redirect(w, r, d.url("/schedules")+"?"+url.Values{"done": {a.Name}}.Encode(), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, d.url("/workflows/"+url.PathEscape(workflow))+"?"+url.Values{"done": {a.Name}}.Encode(), http.StatusSeeOther)
}
