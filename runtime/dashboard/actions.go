package dashboard

import (
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/ops"
)

// An action is what a run's page can do to it.
type action struct {
	Name string // the path's last element: cancel, retry or rerun
	// Verb and Question are what the confirmation says.
	Verb, Question string
	do             func(a *ops.Admin, r *http.Request, id uuid.UUID) ops.ActionResult
}

func actionNamed(name string) (action, bool) {
	switch name {
	case "cancel":
		return action{Name: name, Verb: "Cancel run", Question: "Cancel this run? Its unfinished steps are cancelled and the workers running them stop.",
			do: func(a *ops.Admin, r *http.Request, id uuid.UUID) ops.ActionResult {
				return a.Cancel(r.Context(), id)[0]
			}}, true
	case "retry":
		return action{Name: name, Verb: "Retry run", Question: "Retry this run? It runs again from the steps that did not complete; completed steps keep their outputs.",
			do: func(a *ops.Admin, r *http.Request, id uuid.UUID) ops.ActionResult { return a.Retry(r.Context(), id)[0] }}, true
	case "rerun":
		// The step comes with the form (or, on the confirmation a link
		// comes to, in the query).
		return action{Name: name, Verb: "Rerun from a step",
			Question: "Rerun this run from the step below? It and every step below it run again, as new attempts of this run, with the kept outputs of the steps above it.",
			do: func(a *ops.Admin, r *http.Request, id uuid.UUID) ops.ActionResult {
				return a.Rerun(r.Context(), r.FormValue("step"), id)[0]
			}}, true
	}
	return action{}, false
}

// confirmData is what the confirmation page shows: the question, what it
// is about (Kind, and Label linking to Back), and where the confirmed
// form posts. Back and Post are paths under the dashboard's base.
type confirmData struct {
	Verb, Question string
	Kind, Label    string
	Back, Post     string
	// Step is the step a rerun starts from, posted with the form.
	Step string
}

// runConfirm is the confirmation of an action on a run; r holds the step
// of a rerun.
func runConfirm(a action, id uuid.UUID, r *http.Request) confirmData {
	c := confirmData{Verb: a.Verb, Question: a.Question, Kind: "Run", Label: id.String(),
		Back: "/runs/" + id.String(), Post: "/runs/" + id.String() + "/" + a.Name}
	if a.Name == "rerun" {
		c.Step = r.FormValue("step")
	}
	return c
}

// notices are what a run's page says after an action, by the outcome the
// redirect names (nothing else is shown).
func notices() map[string]string {
	return map[string]string{
		string(ops.Cancelled):     "Cancelled: the run's unfinished steps are cancelled.",
		string(ops.AlreadyEnded):  "Nothing to cancel: the run had already ended.",
		string(ops.Retried):       "Retried: the run is running again from the steps that did not complete.",
		string(ops.NotRetryable):  "Nothing to retry: only failed and cancelled runs can be retried.",
		string(ops.Rerun):         "Rerun: the step you chose and every step below it run again.",
		string(ops.NotRerunnable): "Nothing to rerun: only a finished run can be rerun.",
		doneTriggered:             "Triggered: the run waits for a worker that registered its workflow.",
		doneExisting:              "An earlier run holds this idempotency key: this is that run, and no other was triggered.",
	}
}

// allowed returns the action the request's path names, or answers 404
// (there is no such what at the path) or, on a read-only dashboard, 403.
func (d *Dashboard) allowed(w http.ResponseWriter, r *http.Request, what string) (action, bool) {
	a, ok := actionNamed(r.PathValue("action"))
	return a, d.mayAct(w, r, ok, what, "it does not cancel, retry or rerun runs")
}

// mayAct answers 404 when the path names no action (there is no such
// what at it) and 403 to a read-only user (who does not, as refusal
// says), and reports whether the request may go on.
func (d *Dashboard) mayAct(w http.ResponseWriter, r *http.Request, found bool, what, refusal string) bool {
	if !found {
		d.errorPage(w, r, http.StatusNotFound, "There is no "+what+" at "+r.URL.Path+".")
		return false
	}
	if u := userOf(r); u.ReadOnly {
		who := "This dashboard is read-only"
		if u.Name != "" && !d.opts.ReadOnly {
			who = "You (" + u.Name + ") are read-only"
		}
		d.errorPage(w, r, http.StatusForbidden, who+": "+refusal+".")
		return false
	}
	return true
}

// confirmed reports whether an action's POST comes from a page of this
// dashboard (its CSRF token) and was confirmed. It answers 403 to a
// request without a valid token, and shows the confirmation c to one
// that was not confirmed (a browser without the page script).
func (d *Dashboard) confirmed(w http.ResponseWriter, r *http.Request, name, section string, c confirmData) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := d.csrf.check(r); err != nil {
		d.log.Warn("dashboard: refused an action", "action", name, "path", r.URL.Path, "why", err)
		d.errorPage(w, r, http.StatusForbidden, "Refused: "+err.Error())
		return false
	}
	if r.PostFormValue("confirm") != "yes" {
		d.render(w, r, http.StatusOK, "confirm", d.newPage(w, r, section, c.Verb, c))
		return false
	}
	return true
}

// confirm shows the confirmation of an action: what a browser without
// the page script, or a link, comes to.
func (d *Dashboard) confirm(w http.ResponseWriter, r *http.Request) {
	a, ok := d.allowed(w, r, "page")
	if !ok {
		return
	}
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	if err := d.checkVisible(r.Context(), userOf(r), id); err != nil {
		d.runProblem(w, r, id, err)
		return
	}
	d.render(w, r, http.StatusOK, "confirm", d.newPage(w, r, "runs", a.Verb, runConfirm(a, id, r)))
}

// act cancels, retries or reruns a run, once the request proves it comes from a
// page of this dashboard and was confirmed, then shows the run.
func (d *Dashboard) act(w http.ResponseWriter, r *http.Request) {
	a, ok := d.allowed(w, r, "action")
	if !ok {
		return
	}
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	if err := d.checkVisible(r.Context(), userOf(r), id); err != nil {
		d.runProblem(w, r, id, err)
		return
	}
	if !d.confirmed(w, r, a.Name, "runs", runConfirm(a, id, r)) {
		return
	}
	res := a.do(d.admin, r, id)
	switch res.Outcome {
	case ops.NotFound:
		d.errorPage(w, r, http.StatusNotFound, "There is no run "+id.String()+".")
		return
	case ops.Failed:
		d.log.Error("dashboard: "+a.Name+" failed", "run", id, "err", res.Error)
		d.errorPage(w, r, http.StatusInternalServerError, a.Verb+" failed: "+res.Error)
		return
	case ops.NotRerunnable:
		if res.Error != "" { // a step the run's workflow does not have
			d.errorPage(w, r, http.StatusBadRequest, "Not rerun: "+res.Error+".")
			return
		}
	}
	d.log.Info("dashboard: "+a.Name, "run", id, "outcome", res.Outcome, "user", userOf(r).Name)
	http.Redirect(w, r, d.url("/runs/"+id.String())+"?"+url.Values{"done": {string(res.Outcome)}}.Encode(), http.StatusSeeOther)
}
