package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// runData is what a run's page shows.
type runData struct {
	Run      *ops.RunDetail
	Events   []runtime.Event
	DAG      *dag
	Timeline timeline
	Input    jsonView
	Steps    []stepView
	// Doing are the steps under way of a running run.
	Doing []ops.Step
	// CanCancel, CanRetry and CanRerun say which actions the run's status
	// allows (a rerun from any step of a finished run but its failure
	// handler).
	CanCancel, CanRetry, CanRerun bool
	// Gone is true when the run no longer exists (it was purged while
	// the page was open).
	Gone bool
	ID   uuid.UUID
	// Problem is a read that failed, shown instead of the run.
	Problem string
}

// stepView is a step as the run's page shows it.
type stepView struct {
	ops.Step
	// Anchor is the id of the step's details, which its DAG node links to.
	Anchor string
	Output jsonView
	Took   string
}

// runID reads the run id of a path, or answers 400.
func (d *Dashboard) runID(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		d.badParam(w, r, "run id", fmt.Errorf("%q is not a run id (a UUID such as 0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b)", r.PathValue("id")))
		return uuid.Nil, false
	}
	return id, true
}

func (d *Dashboard) run(w http.ResponseWriter, r *http.Request) {
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	data := d.loadRun(r.Context(), userOf(r), id)
	status := http.StatusOK
	switch {
	case data.Gone:
		status = http.StatusNotFound
	case data.Problem != "":
		status = http.StatusInternalServerError
	}
	title := "Run " + id.String()
	if data.Run != nil {
		title = data.Run.Workflow + " run " + id.String()[:8]
	}
	p := d.newPage(w, r, "runs", title, data)
	p.Notice = notices()[r.URL.Query().Get("done")]
	if status == http.StatusOK {
		p.Live = d.url("/live/runs/" + id.String())
	}
	d.render(w, r, status, "run", p)
}

func (d *Dashboard) liveRun(w http.ResponseWriter, r *http.Request) {
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	u := userOf(r)
	if err := d.checkVisible(r.Context(), u, id); err != nil {
		d.runProblem(w, r, id, err)
		return
	}
	d.stream(w, r, "run/"+id.String(), id, func(ctx context.Context) ([]byte, error) {
		data := d.loadRun(ctx, u, id)
		if data.Problem != "" {
			return nil, errors.New(data.Problem)
		}
		return d.fragment("run", d.livePage(u, data))
	})
}

// loadRun reads everything a run's page shows: the run, its steps and
// event log, and its workflow version's definition, through ops. A run
// of a tenant u does not see is Gone, as one that does not exist.
func (d *Dashboard) loadRun(ctx context.Context, u User, id uuid.UUID) *runData {
	data := &runData{ID: id}
	run, err := d.admin.GetRun(ctx, id)
	if errors.Is(err, runtime.ErrRunNotFound) || err == nil && !u.Sees(run.Tenant) {
		data.Gone = true
		return data
	}
	if err != nil {
		data.Problem = d.problem("reading run "+id.String(), err)
		return data
	}
	events, err := d.admin.Engine().Events(ctx, id)
	if errors.Is(err, runtime.ErrRunNotFound) {
		data.Gone = true
		return data
	}
	if err != nil {
		data.Problem = d.problem("reading the events of run "+id.String(), err)
		return data
	}
	data.Run, data.Events = run, events
	data.Input = newJSONView(run.Input)
	data.CanCancel = run.Status == runtime.RunRunning
	data.CanRetry = run.Status == runtime.RunFailed || run.Status == runtime.RunCancelled
	data.CanRerun = run.Status.Terminal()
	status := map[string]string{}
	links := map[string]string{}
	for _, s := range run.Steps {
		v := stepView{Step: s, Anchor: "step-" + strconv.Itoa(s.Index), Took: "-"}
		if len(s.Output) > 0 {
			v.Output = newJSONView(s.Output)
		}
		if took, ok := s.Duration(); ok {
			v.Took = shortDuration(took)
		}
		data.Steps = append(data.Steps, v)
		if run.Status == runtime.RunRunning && underWay(s.Status) {
			data.Doing = append(data.Doing, s)
		}
		status[s.Name] = string(s.Status)
		links[s.Name] = "#" + v.Anchor
	}
	if spec, err := d.admin.Spec(ctx, run.Version); err != nil {
		d.log.Warn("dashboard: reading a workflow version", "version", run.Version, "err", err)
	} else {
		data.DAG = newDAG(spec, status, links)
	}
	data.Timeline = newTimeline(run, events, d.clock.Now().UTC())
	return data
}

// runJSON serves a run's input or a step's output whole, as JSON to
// download (a page shows only the beginning of a large one).
func (d *Dashboard) runJSON(w http.ResponseWriter, r *http.Request) {
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	run, err := d.admin.GetRun(r.Context(), id)
	if err == nil && !userOf(r).Sees(run.Tenant) {
		err = errNotVisible
	}
	if err != nil {
		d.runProblem(w, r, id, err)
		return
	}
	doc, name := []byte(run.Input), "input"
	if step := r.PathValue("step"); step != "" {
		doc = nil
		for _, s := range run.Steps {
			if s.Name == step {
				doc, name = s.Output, "output-"+strconv.Itoa(s.Index)
			}
		}
		if doc == nil {
			d.errorPage(w, r, http.StatusNotFound, fmt.Sprintf("Run %s has no output of a step %q.", id, step))
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s.json"`, id, name))
	_, _ = w.Write(doc)
}

// runProblem answers a run that could not be read: 404 for one that does
// not exist (or that the user may not see), 500 for a failed read.
func (d *Dashboard) runProblem(w http.ResponseWriter, r *http.Request, id uuid.UUID, err error) {
	if isNotFound(err) {
		d.errorPage(w, r, http.StatusNotFound, "There is no run "+id.String()+".")
		return
	}
	d.errorPage(w, r, http.StatusInternalServerError, d.problem("reading run "+id.String(), err))
}

// underWay reports whether a step in status st is under way: queued,
// running, sleeping, retrying or waiting.
func underWay(st runtime.TaskStatus) bool {
	switch st {
	case runtime.TaskQueued, runtime.TaskRunning, runtime.TaskSleeping, runtime.TaskRetrying, runtime.TaskWaiting:
		return true
	}
	return false
}
