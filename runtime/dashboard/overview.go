package dashboard

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// The overview's window: the last hour, a bar per minute.
const (
	activityWindow = time.Hour
	activityBucket = time.Minute
	latestFailed   = 10
)

// overviewData is what the overview shows. Each part is read on its own:
// one that fails shows its error, and the others still show.
type overviewData struct {
	Activity *ops.Activity
	Totals   ops.ActivityBucket
	Chart    chart
	Tenants  []tenantQueue
	Stuck    []runtime.StuckRun
	Workers  []ops.Worker
	Leader   string
	Failed   []ops.Run
	Errors   map[string]string
	// Rows is how many workers and tenants are shown; their pages show
	// every one.
	Rows int
}

// tenantQueue is a tenant's live work, over its workflows.
type tenantQueue struct {
	Tenant         string
	Workflows      []string
	Queued         int
	Running        int
	OldestQueuedAt *time.Time
	// Paused are its workflows a pause holds, and PausedQueued their
	// queued tasks (counted in Queued too).
	Paused       []string
	PausedQueued int
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	data := d.loadOverview(r.Context(), userOf(r))
	p := d.newPage(w, r, "overview", "Overview", data)
	p.Live = d.url("/live/overview")
	d.render(w, r, http.StatusOK, "overview", p)
}

func (d *Dashboard) liveOverview(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	d.stream(w, r, "overview", uuid.Nil, func(ctx context.Context) ([]byte, error) {
		return d.fragment("overview", d.livePage(u, d.loadOverview(ctx, u)))
	})
}

// loadOverview reads the overview. For a user who sees only some
// tenants it shows their queue, stuck and failed runs, and not the
// activity or the workers, which add up every tenant's.
func (d *Dashboard) loadOverview(ctx context.Context, u User) *overviewData {
	data := &overviewData{Errors: map[string]string{}, Rows: overviewRows}
	var err error
	if u.Scoped() {
		data.Errors["activity"] = scopedActivity
	} else if data.Activity, err = d.admin.Activity(ctx, activityWindow, activityBucket); err != nil {
		data.Errors["activity"] = d.problem("reading run activity", err)
	} else {
		data.Totals = data.Activity.Totals()
		data.Chart = newChart(data.Activity)
	}
	if groups, err := d.admin.Queue(ctx); err != nil {
		data.Errors["queue"] = d.problem("reading the queue", err)
	} else {
		groups = slices.DeleteFunc(groups, func(g ops.QueueGroup) bool { return !u.Sees(g.Tenant) })
		data.Tenants = byTenant(groups)
	}
	if data.Stuck, err = d.admin.Engine().StuckRuns(ctx); err != nil {
		data.Errors["stuck"] = d.problem("reading stuck runs", err)
	}
	data.Stuck = slices.DeleteFunc(data.Stuck, func(s runtime.StuckRun) bool { return !u.Sees(s.Tenant) })
	if u.Scoped() {
		data.Errors["workers"] = scopedWorkers
	} else if data.Workers, err = d.admin.Workers(ctx); err != nil {
		data.Errors["workers"] = d.problem("reading workers", err)
	}
	sortWorkers(data.Workers)
	for _, w := range data.Workers {
		if w.Leader {
			data.Leader = w.ID
		}
	}
	if data.Failed, err = d.visibleRuns(ctx, u, ops.RunFilter{Statuses: []runtime.RunStatus{runtime.RunFailed}, Limit: latestFailed}); err != nil {
		data.Errors["failed"] = d.problem("listing failed runs", err)
	}
	return data
}

// problem logs a failed read and returns what the page says of it.
func (d *Dashboard) problem(what string, err error) string {
	d.log.Warn("dashboard: "+what, "err", err)
	return what + ": " + err.Error()
}

// byTenant adds up the queue's groups per tenant, the tenant with the
// longest wait first, then the deepest queue.
func byTenant(groups []ops.QueueGroup) []tenantQueue {
	index := map[string]int{}
	var out []tenantQueue
	for _, g := range groups {
		i, ok := index[g.Tenant]
		if !ok {
			i = len(out)
			index[g.Tenant] = i
			out = append(out, tenantQueue{Tenant: g.Tenant})
		}
		t := &out[i]
		t.Workflows = append(t.Workflows, g.Workflow)
		if g.Paused {
			t.Paused = append(t.Paused, g.Workflow)
			t.PausedQueued += g.Queued
		}
		t.Queued += g.Queued
		t.Running += g.Running
		if oldest := g.OldestQueuedAt; !oldest.IsZero() && (t.OldestQueuedAt == nil || oldest.Before(*t.OldestQueuedAt)) {
			t.OldestQueuedAt = &oldest
		}
	}
	slices.SortStableFunc(out, func(a, b tenantQueue) int {
		switch {
		case a.OldestQueuedAt != nil && b.OldestQueuedAt == nil:
			return -1
		case a.OldestQueuedAt == nil && b.OldestQueuedAt != nil:
			return 1
		case a.OldestQueuedAt != nil && !a.OldestQueuedAt.Equal(*b.OldestQueuedAt):
			return a.OldestQueuedAt.Compare(*b.OldestQueuedAt)
		}
		return cmp.Or(cmp.Compare(b.Queued, a.Queued), cmp.Compare(a.Tenant, b.Tenant))
	})
	return out
}
