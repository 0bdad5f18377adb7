package dashboard

import (
	"cmp"
	"context"
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

// overviewRows is how many workers and tenants the overview shows; their
// pages show every one.
const overviewRows = 10

// workersData is what the workers page shows.
type workersData struct {
	Workers       []ops.Worker
	Alive, Silent int
	// AliveSample and SilentSample are workers in either state, whose
	// badges say the states' words (ops.Worker.State).
	AliveSample, SilentSample ops.Worker
	Leader                    string
	Pager                     pager
	Problem                   string
}

func (d *Dashboard) workers(w http.ResponseWriter, r *http.Request) {
	n, err := pageNumber(r.URL.Query())
	if err != nil {
		d.badParam(w, r, "page", err)
		return
	}
	p := d.newPage(w, r, "workers", "Workers", d.loadWorkers(r.Context(), userOf(r), n))
	p.Live = d.url("/live/workers?page=" + strconv.Itoa(n))
	d.render(w, r, http.StatusOK, "workers", p)
}

func (d *Dashboard) liveWorkers(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	n, err := pageNumber(r.URL.Query())
	if err != nil {
		d.badParam(w, r, "page", err)
		return
	}
	d.stream(w, r, "workers?page="+strconv.Itoa(n), uuid.Nil, func(ctx context.Context) ([]byte, error) {
		return d.fragment("workers", d.livePage(u, d.loadWorkers(ctx, u, n)))
	})
}

// loadWorkers reads page n of the workers: every worker the store knows,
// leader first, then the silent ones, then by id.
func (d *Dashboard) loadWorkers(ctx context.Context, u User, n int) *workersData {
	data := &workersData{AliveSample: ops.Worker{Alive: true}}
	if u.Scoped() {
		data.Problem = scopedWorkers
		return data
	}
	all, err := d.admin.Workers(ctx)
	if err != nil {
		data.Problem = d.problem("reading workers", err)
		return data
	}
	for _, w := range all {
		if w.Leader {
			data.Leader = w.ID
		}
		if w.Alive {
			data.Alive++
		} else {
			data.Silent++
		}
	}
	sortWorkers(all)
	data.Workers, data.Pager = paginate(all, n, func(page int) string {
		return pageLink(d.url("/workers"), nil, page)
	})
	return data
}

// sortWorkers puts the leader first, then the silent workers, then the
// others, each by id.
func sortWorkers(ws []ops.Worker) {
	slices.SortStableFunc(ws, func(a, b ops.Worker) int {
		switch {
		case a.Leader != b.Leader:
			return boolFirst(a.Leader)
		case a.Alive != b.Alive:
			return boolFirst(!a.Alive)
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// boolFirst orders the one for which b holds first.
func boolFirst(b bool) int {
	if b {
		return -1
	}
	return 1
}

// queueData is what the queue page shows.
type queueData struct {
	// Steps, when the page names a tenant and a workflow, are that
	// group's queued tasks per version and step (read once, not live:
	// their cost grows with the group's queue).
	Steps                        *queueSteps
	Groups                       []ops.QueueGroup
	Queued, Held, Paced, Running int
	// PausedQueued counts the queued tasks of the groups a pause of
	// their workflow holds.
	PausedQueued int
	// Unserved is the queued work no live worker can claim, per workflow
	// version (runtime.UnservedWork); counted over every tenant, so shown
	// to users who see every tenant only.
	Unserved []runtime.UnservedWork
	Pager    pager
	Problem  string
}

func (d *Dashboard) queue(w http.ResponseWriter, r *http.Request) {
	n, err := pageNumber(r.URL.Query())
	if err != nil {
		d.badParam(w, r, "page", err)
		return
	}
	data := d.loadQueue(r.Context(), userOf(r), n)
	q := r.URL.Query()
	if tenant, workflow := q.Get("tenant"), q.Get("workflow"); tenant != "" || workflow != "" {
		data.Steps = d.loadQueueSteps(r.Context(), userOf(r), tenant, workflow)
	}
	p := d.newPage(w, r, "queue", "Queue", data)
	p.Live = d.url("/live/queue?page=" + strconv.Itoa(n))
	d.render(w, r, http.StatusOK, "queue", p)
}

func (d *Dashboard) liveQueue(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	n, err := pageNumber(r.URL.Query())
	if err != nil {
		d.badParam(w, r, "page", err)
		return
	}
	d.stream(w, r, "queue?page="+strconv.Itoa(n), uuid.Nil, func(ctx context.Context) ([]byte, error) {
		return d.fragment("queue", d.livePage(u, d.loadQueue(ctx, u, n)))
	})
}

// loadQueue reads page n of the queue, per tenant and workflow, of the
// tenants u sees: the longest wait first, then the deepest queue.
func (d *Dashboard) loadQueue(ctx context.Context, u User, n int) *queueData {
	data := &queueData{}
	groups, err := d.admin.Queue(ctx)
	if err != nil {
		data.Problem = d.problem("reading the queue", err)
		return data
	}
	groups = slices.DeleteFunc(groups, func(g ops.QueueGroup) bool { return !u.Sees(g.Tenant) })
	for _, g := range groups {
		data.Queued += g.Queued
		data.Held += g.Held
		data.Paced += g.Paced
		data.Running += g.Running
		if g.Paused {
			data.PausedQueued += g.Queued
		}
	}
	slices.SortStableFunc(groups, func(a, b ops.QueueGroup) int {
		switch {
		case a.OldestQueuedAt.IsZero() != b.OldestQueuedAt.IsZero():
			return boolFirst(!a.OldestQueuedAt.IsZero())
		case !a.OldestQueuedAt.Equal(b.OldestQueuedAt):
			return a.OldestQueuedAt.Compare(b.OldestQueuedAt)
		}
		return cmp.Or(cmp.Compare(b.Queued, a.Queued), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Workflow, b.Workflow))
	})
	data.Groups, data.Pager = paginate(groups, n, func(page int) string {
		return pageLink(d.url("/queue"), nil, page)
	})
	if !u.Scoped() && len(groups) > 0 {
		if data.Unserved, err = d.admin.Unserved(ctx); err != nil {
			data.Problem = d.problem("reading the unserved work", err)
		}
	}
	return data
}

// queueSteps is one group of the queue, per version and step.
type queueSteps struct {
	Tenant, Workflow string
	Steps            []ops.QueueStep
	Problem          string
}

// loadQueueSteps reads where one tenant's runs of one workflow wait.
func (d *Dashboard) loadQueueSteps(ctx context.Context, u User, tenant, workflow string) *queueSteps {
	s := &queueSteps{Tenant: tenant, Workflow: workflow}
	switch {
	case tenant == "" || workflow == "":
		s.Problem = "Name a tenant and a workflow (the queue's rows link to them) to see where their tasks wait."
	case !u.Sees(tenant):
		s.Problem = "You see the queue of tenants " + strings.Join(u.Tenants, ", ") + " only."
	default:
		var err error
		if s.Steps, err = d.admin.QueueSteps(ctx, tenant, workflow); err != nil {
			s.Problem = d.problem("reading the queue of "+workflow, err)
		}
	}
	return s
}

// scheduleRow is a schedule on the schedules page, with its ticks.
type scheduleRow struct {
	runtime.Schedule
	// Next is its next tick (zero while paused), LastTick its latest
	// (zero when it came before the schedule was created), and LastRun
	// the run that tick started, if one did.
	Next, LastTick time.Time
	LastRun        *ops.Run
	Problem        string
}

// schedulesData is what the schedules page shows.
type schedulesData struct {
	Workflow  string
	Schedules []scheduleRow
	Paused    int
	Pager     pager
	Problem   string
}

func (d *Dashboard) schedules(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, err := pageNumber(q)
	if err != nil {
		d.badParam(w, r, "page", err)
		return
	}
	p := d.newPage(w, r, "schedules", "Schedules", d.loadSchedules(r.Context(), userOf(r), q.Get("workflow"), n))
	p.Notice = scheduleNotice(q.Get("done"))
	p.Live = queryLink(d.url("/live/schedules"), url.Values{"workflow": {q.Get("workflow")}, "page": {strconv.Itoa(n)}}.Encode())
	d.render(w, r, http.StatusOK, "schedules", p)
}

func (d *Dashboard) liveSchedules(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	q := r.URL.Query()
	n, err := pageNumber(q)
	if err != nil {
		d.badParam(w, r, "page", err)
		return
	}
	workflow := q.Get("workflow")
	d.stream(w, r, "schedules?"+url.Values{"workflow": {workflow}, "page": {strconv.Itoa(n)}}.Encode(), uuid.Nil, func(ctx context.Context) ([]byte, error) {
		return d.fragment("schedules", d.livePage(u, d.loadSchedules(ctx, u, workflow, n)))
	})
}

// loadSchedules reads page n of the schedules of every workflow (of
// workflow, when not empty) of the tenants u sees, by workflow and name;
// for the page's schedules only, their ticks and the run the latest
// started.
func (d *Dashboard) loadSchedules(ctx context.Context, u User, workflow string, n int) *schedulesData {
	data := &schedulesData{Workflow: workflow}
	all, err := d.admin.Schedules(ctx, workflow)
	if err != nil {
		data.Problem = d.problem("listing schedules", err)
		return data
	}
	all = slices.DeleteFunc(all, func(s runtime.Schedule) bool { return !u.Sees(s.Tenant) })
	for _, s := range all {
		if s.Paused {
			data.Paused++
		}
	}
	shown, pg := paginate(all, n, func(page int) string {
		q := url.Values{}
		if workflow != "" {
			q.Set("workflow", workflow)
		}
		return pageLink(d.url("/schedules"), q, page)
	})
	data.Pager = pg
	now := d.clock.Now()
	for _, s := range shown {
		row := scheduleRow{Schedule: s}
		last, next, err := runtime.ScheduleTicks(s, now)
		if err != nil {
			row.Problem = err.Error()
		} else {
			if !last.Before(s.CreatedAt) {
				row.LastTick = last
			}
			if !s.Paused {
				row.Next = next
			}
		}
		if !last.IsZero() && !last.Before(s.CreatedAt) { // a tick before the schedule was created started nothing
			runs, err := d.admin.ListRuns(ctx, ops.RunFilter{Workflow: s.Workflow, Tenant: s.Tenant, IdempotencyKey: runtime.ScheduleRunKey(s.Name, last), Limit: 1})
			if err != nil {
				row.Problem = d.problem("finding the run of schedule "+s.Name, err)
			} else if len(runs.Runs) > 0 {
				row.LastRun = &runs.Runs[0]
			}
		}
		data.Schedules = append(data.Schedules, row)
	}
	return data
}
