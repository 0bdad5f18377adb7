package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// runsForm is the runs list's filter as the user typed it: what the form
// shows again, and what links to other pages carry.
type runsForm struct {
	Workflow string
	Statuses []string
	Tenant   string
	Key      string
	Since    string
	Until    string
	Finished string   // finished since
	Parent   string   // a run id: the runs its steps started
	Tags     []string // each key=value: the runs carry every one
	Where    string
	Limit    string
	After    string
}

// runsData is what the runs list shows.
type runsData struct {
	Form      runsForm
	Workflows []string
	Page      *ops.RunPage
	// Next and First are links to the next page and back to the first.
	Next, First string
	// Param and Problem say which parameter is wrong and why (the page
	// answers 400).
	Param, Problem string
	// Described says in words what the filter selects.
	Described string
	// Nested is true when the listing pages over the runs no step
	// started, each with its child runs beneath it (Children); false when
	// the form names what runs are (a workflow, a status, a key, a
	// condition or a parent), which child runs match too, each shown with
	// its parent.
	Nested bool
	// Children are the runs the steps of each listed run started:
	// counted by status, the first childPreview of them shown.
	Children map[uuid.UUID]*ops.ChildRuns
	// Doing is what each running run shown does now: its steps under way.
	Doing map[uuid.UUID][]ops.Step
}

// childPreview is how many of a run's child runs the runs list shows
// beneath it; a link lists them all.
const childPreview = 5

// maxDoing bounds the running runs whose steps a page reads (a page
// shows up to ops.MaxLimit runs).
const maxDoing = 200

// nested reports whether the form lists top-level runs only, with their
// child runs beneath them: unless it names what runs are, which child
// runs must be found by too. Tenant, tag and time filters keep the
// nesting: child runs carry their parent's tags, and a parent's 10,000
// map items are better counted beneath it than listed.
func (f runsForm) nested() bool {
	return f.Workflow == "" && len(f.Statuses) == 0 && f.Key == "" && f.Where == "" && f.Parent == ""
}

// Has reports whether status s is one the form selects.
func (f runsForm) Has(s string) bool { return slices.Contains(f.Statuses, s) }

// query encodes the form as a query string; with after, for the next page.
func (f runsForm) query(after string) url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("workflow", f.Workflow)
	for _, s := range f.Statuses {
		v.Add("status", s)
	}
	set("tenant", f.Tenant)
	set("key", f.Key)
	set("since", f.Since)
	set("until", f.Until)
	set("finished", f.Finished)
	set("parent", f.Parent)
	for _, t := range f.Tags {
		v.Add("tag", t)
	}
	set("where", f.Where)
	set("limit", f.Limit)
	set("after", after)
	return v
}

// readRunsForm reads the runs list's parameters from a query.
func readRunsForm(q url.Values) runsForm {
	f := runsForm{
		Workflow: strings.TrimSpace(q.Get("workflow")), Tenant: q.Get("tenant"), Key: q.Get("key"),
		Since: strings.TrimSpace(q.Get("since")), Until: strings.TrimSpace(q.Get("until")),
		Finished: strings.TrimSpace(q.Get("finished")), Where: strings.TrimSpace(q.Get("where")),
		Parent: strings.TrimSpace(q.Get("parent")),
		Limit:  strings.TrimSpace(q.Get("limit")), After: strings.TrimSpace(q.Get("after")),
	}
	for _, v := range q["tag"] {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(f.Tags, v) {
			f.Tags = append(f.Tags, v)
		}
	}
	for _, v := range q["status"] {
		for _, s := range strings.Split(v, ",") {
			if s = strings.ToUpper(strings.TrimSpace(s)); s != "" && !slices.Contains(f.Statuses, s) {
				f.Statuses = append(f.Statuses, s)
			}
		}
	}
	return f
}

// paramError is a parameter the runs list cannot use.
type paramError struct {
	param string
	err   error
}

func (e *paramError) Error() string { return fmt.Sprintf("%s: %v", e.param, e.err) }

// filter turns the form into a listing's filter, relative to now, or
// says which parameter is wrong.
func (f runsForm) filter(now time.Time, workflows []string) (ops.RunFilter, error) {
	rf := ops.RunFilter{Workflow: f.Workflow, Tenant: f.Tenant, IdempotencyKey: f.Key, Where: f.Where, After: f.After, Limit: ops.DefaultLimit}
	for _, s := range f.Statuses {
		st := runtime.RunStatus(s)
		if !slices.Contains(ops.RunStatuses(), st) {
			return rf, &paramError{"status", fmt.Errorf("unknown run status %q: use RUNNING, COMPLETED, FAILED or CANCELLED", s)}
		}
		rf.Statuses = append(rf.Statuses, st)
	}
	var err error
	if rf.CreatedFrom, err = parseTime(f.Since, now); err != nil {
		return rf, &paramError{"since", err}
	}
	if rf.CreatedTo, err = parseTime(f.Until, now); err != nil {
		return rf, &paramError{"until", err}
	}
	if !rf.CreatedFrom.IsZero() && !rf.CreatedTo.IsZero() && !rf.CreatedFrom.Before(rf.CreatedTo) {
		return rf, &paramError{"until", errors.New("the time range is empty: until must come after since")}
	}
	if rf.FinishedFrom, err = parseTime(f.Finished, now); err != nil {
		return rf, &paramError{"finished", err}
	}
	if f.Parent != "" {
		if rf.Parent, err = uuid.Parse(f.Parent); err != nil {
			return rf, &paramError{"parent", fmt.Errorf("%q is not a run id", f.Parent)}
		}
	}
	for _, t := range f.Tags {
		k, v, ok := strings.Cut(t, "=")
		if old, dup := rf.Tags[k]; !ok || dup && old != v {
			return rf, &paramError{"tag", fmt.Errorf("%q: give one key=value a tag field, such as customer=acme, and a key once", t)}
		}
		if rf.Tags == nil {
			rf.Tags = map[string]string{}
		}
		rf.Tags[k] = v
	}
	if err := runtime.CheckTags(rf.Tags); err != nil {
		return rf, &paramError{"tag", err}
	}
	if f.Limit != "" {
		n, err := strconv.Atoi(f.Limit)
		if err != nil || n < 1 || n > ops.MaxLimit {
			return rf, &paramError{"limit", fmt.Errorf("%q: give a number of runs per page from 1 to %d", f.Limit, ops.MaxLimit)}
		}
		rf.Limit = n
	}
	if _, err := ops.ParseCursor(f.After); err != nil {
		return rf, &paramError{"after", errors.New("not a page cursor: follow the page links rather than editing them")}
	}
	if f.Where != "" {
		switch {
		case f.Workflow == "":
			return rf, &paramError{"where", errors.New("choose a workflow: the condition is type-checked against that workflow's input schema")}
		case !slices.Contains(workflows, f.Workflow):
			return rf, &paramError{"workflow", fmt.Errorf("no run of workflow %q is stored, so there is no input schema to check the condition against", f.Workflow)}
		}
	}
	return rf, nil
}

// parseTime reads since and until: an RFC 3339 time, a time as a browser's
// datetime-local input sends it (UTC), a date, or a duration before now
// (90m, 24h), as trellis runs list reads them.
func parseTime(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: give an RFC 3339 time (2030-01-02T15:04:05Z), a date (2030-01-02) or a duration ago (1h)", v)
}

func (d *Dashboard) runs(w http.ResponseWriter, r *http.Request) {
	data, status := d.loadRuns(r.Context(), userOf(r), readRunsForm(r.URL.Query()))
	p := d.newPage(w, r, "runs", "Runs", data)
	if status == http.StatusOK && data.Form.Where == "" && data.Form.After == "" {
		p.Live = queryLink(d.url("/live/runs"), data.Form.query("").Encode())
	}
	d.render(w, r, status, "runs", p)
}

// liveRuns streams the first page of a listing without a where condition;
// a where condition can read up to 20,000 runs a page, too many to read
// again every few seconds.
func (d *Dashboard) liveRuns(w http.ResponseWriter, r *http.Request) {
	form := readRunsForm(r.URL.Query())
	if form.Where != "" || form.After != "" {
		d.errorPage(w, r, http.StatusBadRequest, "Only the first page of a listing without a where condition updates live.")
		return
	}
	key := "runs?" + form.query("").Encode()
	u := userOf(r)
	d.stream(w, r, key, uuid.Nil, func(ctx context.Context) ([]byte, error) {
		data, status := d.loadRuns(ctx, u, form)
		if status == http.StatusInternalServerError {
			return nil, errors.New(data.Problem)
		}
		return d.fragment("runs", d.livePage(u, data))
	})
}

// loadRuns reads a page of the listing and the workflow names, and
// returns the status code to answer with. A user who sees only some
// tenants lists one of them at a time: the first unless the form names
// another.
func (d *Dashboard) loadRuns(ctx context.Context, u User, form runsForm) (*runsData, int) {
	if u.Scoped() && form.Tenant == "" {
		form.Tenant = u.Tenants[0]
	}
	data := &runsData{Form: form, First: queryLink(d.url("/runs"), form.query("").Encode())}
	if !u.Sees(form.Tenant) {
		data.Param, data.Problem = "tenant", fmt.Sprintf("you see the runs of tenants %s only", strings.Join(u.Tenants, ", "))
		return data, http.StatusBadRequest
	}
	versions, err := d.admin.Workflows(ctx)
	if err != nil {
		data.Problem = d.problem("listing workflows", err)
		return data, http.StatusInternalServerError
	}
	for _, v := range versions {
		if !slices.Contains(data.Workflows, v.Name) {
			data.Workflows = append(data.Workflows, v.Name)
		}
	}
	filter, err := form.filter(d.clock.Now(), data.Workflows)
	var pe *paramError
	if errors.As(err, &pe) {
		data.Param, data.Problem = pe.param, pe.err.Error()
		return data, http.StatusBadRequest
	}
	data.Nested = form.nested()
	filter.TopLevel = data.Nested
	data.Described = describe(filter, form)
	page, err := d.admin.ListRuns(ctx, filter)
	var where *ops.WhereError
	switch {
	case errors.As(err, &where):
		data.Param, data.Problem = "where", where.Error()
		return data, http.StatusBadRequest
	case err != nil:
		data.Problem = d.problem("listing runs", err)
		return data, http.StatusInternalServerError
	}
	data.Page = page
	if page.Next != "" {
		data.Next = queryLink(d.url("/runs"), form.query(page.Next).Encode())
	}
	if err := d.loadFamily(ctx, data); err != nil {
		data.Problem = d.problem("reading child runs and steps under way", err)
		return data, http.StatusInternalServerError
	}
	return data, http.StatusOK
}

// loadFamily reads, for the runs of a page, the child runs of each and
// the steps under way of those running, shown or previewed.
func (d *Dashboard) loadFamily(ctx context.Context, data *runsData) error {
	ids := make([]uuid.UUID, len(data.Page.Runs))
	for i, r := range data.Page.Runs {
		ids[i] = r.ID
	}
	var err error
	if data.Children, err = d.admin.ChildRuns(ctx, ids, childPreview); err != nil {
		return err
	}
	var running []uuid.UUID
	add := func(r ops.Run) {
		if r.Status == runtime.RunRunning && len(running) < maxDoing {
			running = append(running, r.ID)
		}
	}
	for _, r := range data.Page.Runs {
		add(r)
		if c := data.Children[r.ID]; c != nil {
			for _, k := range c.First {
				add(k)
			}
		}
	}
	data.Doing, err = d.admin.InProgress(ctx, running)
	return err
}

// describe says in words which runs a filter selects.
func describe(f ops.RunFilter, form runsForm) string {
	var parts []string
	if len(f.Statuses) > 0 {
		var names []string
		for _, s := range f.Statuses {
			names = append(names, strings.ToLower(string(s)))
		}
		parts = append(parts, strings.Join(names, " or "))
	}
	parts = append(parts, "runs")
	if f.Workflow != "" {
		parts = append(parts, "of "+f.Workflow)
	}
	if f.Tenant != "" {
		parts = append(parts, "for tenant "+f.Tenant)
	}
	if f.IdempotencyKey != "" {
		parts = append(parts, "with key "+f.IdempotencyKey)
	}
	if form.Since != "" {
		parts = append(parts, "created since "+f.CreatedFrom.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if form.Until != "" {
		parts = append(parts, "created before "+f.CreatedTo.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if form.Finished != "" {
		parts = append(parts, "finished since "+f.FinishedFrom.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if f.Parent != uuid.Nil {
		parts = append(parts, "started by run "+f.Parent.String())
	}
	if len(form.Tags) > 0 {
		parts = append(parts, "tagged "+strings.Join(form.Tags, ", "))
	}
	if f.Where != "" {
		parts = append(parts, "where "+f.Where)
	}
	described := strings.Join(parts, " ") + ", newest first"
	if f.TopLevel {
		described += "; runs started by a step are counted beneath the run that started them"
	} else if f.Parent == uuid.Nil {
		described += ", child runs among them"
	}
	return described
}
