package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// How many of a workflow's latest runs its failure rate is measured over:
// on the workflows list, and on the workflow's page. Each is one indexed
// read of that many runs, however many the workflow has.
const (
	listSample   = 100
	detailSample = ops.MaxLimit
	recentShown  = 20
)

// runStats are counts over a workflow's latest runs.
type runStats struct {
	Sample                                int // runs counted
	Running, Completed, Failed, Cancelled int
	// FailureRate is the failed share of the finished runs counted.
	FailureRate float64
	// LastRun is when the latest run was created.
	LastRun time.Time
	// FailedSteps are the steps that failed the failed runs, most first.
	FailedSteps []stepCount
}

type stepCount struct {
	Step string
	Runs int
}

func statsOf(runs []ops.Run) runStats {
	s := runStats{Sample: len(runs)}
	byStep := map[string]int{}
	for _, r := range runs {
		switch r.Status {
		case runtime.RunRunning:
			s.Running++
		case runtime.RunCompleted:
			s.Completed++
		case runtime.RunFailed:
			s.Failed++
			if r.Failure != nil {
				byStep[r.Failure.Step]++
			}
		case runtime.RunCancelled:
			s.Cancelled++
		}
		if r.CreatedAt.After(s.LastRun) {
			s.LastRun = r.CreatedAt
		}
	}
	if finished := s.Completed + s.Failed + s.Cancelled; finished > 0 {
		s.FailureRate = float64(s.Failed) / float64(finished)
	}
	for step, n := range byStep {
		s.FailedSteps = append(s.FailedSteps, stepCount{step, n})
	}
	slices.SortFunc(s.FailedSteps, func(a, b stepCount) int { return cmp.Or(cmp.Compare(b.Runs, a.Runs), cmp.Compare(a.Step, b.Step)) })
	return s
}

// workflowRow is one workflow on the workflows list.
type workflowRow struct {
	Latest   ops.WorkflowSummary
	Versions int
	Stats    runStats
	Problem  string
}

func (d *Dashboard) workflows(w http.ResponseWriter, r *http.Request) {
	versions, err := d.admin.Workflows(r.Context())
	if err != nil {
		d.errorPage(w, r, http.StatusInternalServerError, d.problem("listing workflows", err))
		return
	}
	var list []workflowRow
	for _, v := range versions { // by name, newest first
		if n := len(list); n > 0 && list[n-1].Latest.Name == v.Name {
			list[n-1].Versions++
			continue
		}
		v.Paused = visiblePauses(userOf(r), v.Paused)
		s := workflowRow{Latest: v, Versions: 1}
		if runs, err := d.visibleRuns(r.Context(), userOf(r), ops.RunFilter{Workflow: v.Name, Limit: listSample}); err != nil {
			s.Problem = d.problem("listing runs of "+v.Name, err)
		} else {
			s.Stats = statsOf(runs)
		}
		list = append(list, s)
	}
	d.render(w, r, http.StatusOK, "workflows", d.newPage(w, r, "workflows", "Workflows", list))
}

// workflowData is what a workflow's page shows.
type workflowData struct {
	Name     string
	Versions []ops.WorkflowSummary
	Version  ops.WorkflowSummary // the one drawn
	DAG      *dag
	Stats    runStats
	Recent   []ops.Run
	// Schedules are the workflow's cron schedules: its newest version's
	// file's and those created at run time.
	Schedules []runtime.Schedule
	// Trigger is the form that triggers a run of the newest version, nil
	// for a read-only user or when that version cannot be read; Tenants
	// are those the form offers, the first the default.
	Trigger *inputForm
	Tenants []string
	// Paused are its pauses the user sees (see visiblePauses); PausedAll
	// says whether one is for every tenant, which a user who sees only
	// some tenants cannot lift.
	Paused    []runtime.WorkflowPause
	PausedAll bool
	// Scoped says that the user sees only some tenants: the pause and
	// resume buttons are for theirs.
	Scoped  bool
	Problem string
}

func (d *Dashboard) workflow(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	data, status, err := d.loadWorkflow(r.Context(), userOf(r), name, r.URL.Query().Get("version"))
	if err != nil {
		if status == http.StatusBadRequest {
			d.badParam(w, r, "version", err)
			return
		}
		d.errorPage(w, r, status, err.Error())
		return
	}
	p := d.newPage(w, r, "workflows", "Workflow "+name, data)
	p.Notice = cmp.Or(scheduleNotice(r.URL.Query().Get("done")), workflowPauseNotice(r.URL.Query().Get("done")))
	d.render(w, r, http.StatusOK, "workflow", p)
}

// loadWorkflow reads a workflow's page: its runs and schedules those of
// the tenants u sees.
func (d *Dashboard) loadWorkflow(ctx context.Context, u User, name, version string) (*workflowData, int, error) {
	all, err := d.admin.Workflows(ctx)
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("%s", d.problem("listing workflows", err))
	}
	data := &workflowData{Name: name}
	for _, v := range all {
		if v.Name == name {
			data.Versions = append(data.Versions, v)
		}
	}
	if len(data.Versions) == 0 {
		return nil, http.StatusNotFound, fmt.Errorf("no version of a workflow %q is stored (a workflow is stored when its first run is triggered)", name)
	}
	data.Version = data.Versions[0]
	data.Paused, data.Scoped = visiblePauses(u, data.Versions[0].Paused), u.Scoped()
	data.PausedAll = slices.ContainsFunc(data.Paused, func(p runtime.WorkflowPause) bool { return p.Tenant == "" })
	if version != "" {
		i := slices.IndexFunc(data.Versions, func(v ops.WorkflowSummary) bool { return v.Version == version })
		if i < 0 {
			return nil, http.StatusBadRequest, fmt.Errorf("%q is not a version of %s", version, name)
		}
		data.Version = data.Versions[i]
	}
	if spec, err := d.admin.Spec(ctx, data.Version.Version); err != nil {
		data.Problem = d.problem("reading workflow version "+data.Version.Version, err)
	} else {
		data.DAG = newDAG(spec, nil, nil)
	}
	if !u.ReadOnly {
		if newest, err := d.admin.Spec(ctx, data.Versions[0].Version); err != nil {
			data.Problem = d.problem("reading workflow version "+data.Versions[0].Version, err)
		} else {
			form := newInputForm(newest.InputSchema)
			data.Trigger = &form
		}
		data.Tenants = u.Tenants
		if !u.Scoped() {
			data.Tenants = []string{runtime.DefaultTenant}
		}
	}
	if data.Schedules, err = d.admin.Schedules(ctx, name); err != nil {
		data.Problem = d.problem("listing the schedules of "+name, err)
	}
	data.Schedules = slices.DeleteFunc(data.Schedules, func(s runtime.Schedule) bool { return !u.Sees(s.Tenant) })
	runs, err := d.visibleRuns(ctx, u, ops.RunFilter{Workflow: name, Limit: detailSample})
	if err != nil {
		data.Problem = d.problem("listing runs of "+name, err)
		return data, http.StatusOK, nil
	}
	data.Stats = statsOf(runs)
	data.Recent = runs[:min(len(runs), recentShown)]
	return data, http.StatusOK, nil
}
