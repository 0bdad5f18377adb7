package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// What a run's page says after the dashboard triggered it.
const (
	doneTriggered = "triggered"
	doneExisting  = "existing"
)

// triggerSlack is how much a trigger form's body may hold beyond the
// engine's MaxInputBytes: the other fields, and form encoding. An input
// over the limit but within the slack gets the engine's own error.
const triggerSlack = 64 << 10

// trigger starts a run of a workflow's newest stored version from the
// form on the workflow's page, through the API's own path
// (ops.Admin.Trigger, Workflow.Trigger) and so its validation. A refused
// input shows the workflow's page again, each of the API's problems next
// to the field it names; a run created (or found by its idempotency key)
// is shown.
func (d *Dashboard) trigger(w http.ResponseWriter, r *http.Request) {
	if !d.mayAct(w, r, true, "page", "it does not trigger runs") {
		return
	}
	name := r.PathValue("name")
	r.Body = http.MaxBytesReader(w, r.Body, int64(d.admin.Engine().Config().SizeLimits.MaxInputBytes+triggerSlack))
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			d.errorPage(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf(
				"The form is over %d bytes: the input may be at most %d bytes (Config.SizeLimits.MaxInputBytes).", tooBig.Limit, tooBig.Limit-triggerSlack))
			return
		}
		d.errorPage(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	if err := d.csrf.check(r); err != nil {
		d.log.Warn("dashboard: refused a trigger", "workflow", name, "why", err)
		d.errorPage(w, r, http.StatusForbidden, "Refused: "+err.Error())
		return
	}
	u := userOf(r)
	data, status, err := d.loadWorkflow(r.Context(), u, name, "")
	if err != nil {
		d.errorPage(w, r, status, err.Error())
		return
	}
	if data.Trigger == nil {
		d.errorPage(w, r, http.StatusInternalServerError, "The newest version of "+name+" could not be read: "+data.Problem)
		return
	}
	form := data.Trigger
	input, ok := form.read(r.PostForm)
	status = http.StatusUnprocessableEntity
	tenant := form.Tenant
	if tenant == "" {
		tenant = data.Tenants[0]
	}
	if !u.Sees(tenant) {
		status = http.StatusForbidden
		form.Problems = append(form.Problems, fmt.Sprintf("tenant %q: you trigger runs of %s only", truncate(tenant, 80), strings.Join(u.Tenants, ", ")))
		ok = false
	}
	tags, tagProblems := readTags(form.Tags)
	if len(tagProblems) > 0 {
		form.Problems = append(form.Problems, tagProblems...)
		ok = false
	}
	timing, problems := form.runOptions()
	if len(problems) > 0 {
		form.Problems = append(form.Problems, problems...)
		ok = false
	}
	if ok {
		opts := append([]runtime.RunOption{runtime.WithTenant(tenant)}, timing...)
		if form.Key != "" {
			opts = append(opts, runtime.WithIdempotencyKey(form.Key))
		}
		if len(tags) > 0 {
			opts = append(opts, runtime.WithTags(tags))
		}
		ref, err := d.admin.Trigger(r.Context(), name, input, opts...)
		if err == nil {
			done := doneTriggered
			if ref.Existing {
				done = doneExisting
			}
			d.log.Info("dashboard: trigger", "workflow", name, "run", ref.ID, "tenant", tenant, "existing", ref.Existing, "user", u.Name)
			http.Redirect(w, r, d.url("/runs/"+ref.ID.String())+"?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
			return
		}
		status = d.triggerProblem(form, name, err)
	}
	form.Refused = true
	p := d.newPage(w, r, "workflows", "Workflow "+name, data)
	d.render(w, r, status, "workflow", p)
}

// triggerProblem puts what the API said of a refused trigger on the form
// and returns the status to answer: 422 for what the user can fix, 500
// for a failure of the store, logged.
func (d *Dashboard) triggerProblem(form *inputForm, workflow string, err error) int {
	var inputErr *runtime.InputError
	var limitErr *runtime.LimitError
	switch {
	case errors.As(err, &inputErr):
		for _, p := range inputErr.Problems {
			form.place(p.Field, p.Message)
		}
	case errors.As(err, &limitErr):
		form.Problems = append(form.Problems, limitErr.Error())
	case errors.Is(err, ops.ErrVersionNotFound):
		form.Problems = append(form.Problems, err.Error())
		return http.StatusNotFound
	case errors.Is(err, runtime.ErrInvalidInput), errors.Is(err, runtime.ErrOverLimit), errors.Is(err, runtime.ErrInvalidIdentifier),
		errors.Is(err, runtime.ErrInvalidTag):
		form.Problems = append(form.Problems, err.Error())
	default:
		d.log.Error("dashboard: trigger failed", "workflow", workflow, "err", err)
		form.Problems = append(form.Problems, "Triggering failed: "+err.Error())
		return http.StatusInternalServerError
	}
	return http.StatusUnprocessableEntity
}

// readTags reads the trigger form's tags: a key=value a line, blank
// lines ignored. The API checks the keys and values; this says which
// lines are not tags.
func readTags(text string) (map[string]string, []string) {
	var tags map[string]string
	var problems []string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			problems = append(problems, fmt.Sprintf("tags, line %d: give key=value, such as customer=acme", i+1))
			continue
		}
		if _, dup := tags[k]; dup {
			problems = append(problems, fmt.Sprintf("tags, line %d: tag %s is given twice", i+1, truncate(k, 80)))
			continue
		}
		if tags == nil {
			tags = map[string]string{}
		}
		tags[k] = v
	}
	return tags, problems
}
