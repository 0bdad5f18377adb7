package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
)

// gaugeTenants bounds the tenants the queue gauges name: the ones with
// the most queued tasks. The tasks of the others are reported under
// otherTenants (0 when there are none), so that the series of a gauge
// still add up to the whole queue however many tenants there are, and an
// empty queue reads 0 rather than nothing.
const (
	gaugeTenants = 100
	otherTenants = "_other"
	// allTenants names the tenant of a pause of every tenant in the
	// paused gauge.
	allTenants = "_all"
)

// gaugeTimeout bounds the store reads of one collection of the gauges.
const gaugeTimeout = 5 * time.Second

// GaugeSource is where the gauges read their values.
type GaugeSource struct {
	// Leader reports whether this engine leads.
	Leader func() bool
	// Cluster reports whether this engine reports the gauges read from
	// the store: it leads, or a Driver runs it (a test's engine, which
	// does the leader's work itself).
	Cluster func() bool
	// Store answers the queue depth.
	Store store.Store
	// StaleAfter is how long a worker that has not heartbeated stays
	// live, for the unserved gauge.
	StaleAfter time.Duration
	// StuckRuns counts the stuck runs; nil when the engine does not look
	// for them.
	StuckRuns func(ctx context.Context) (int, error)
	// Unserved counts the queued tasks no live worker can claim, per
	// workflow version (runtime.Engine.Unserved).
	Unserved func(ctx context.Context) ([]UnservedTasks, error)
	// Faults and Clock log failed store reads once per outage (a gauge
	// without a value is better than a collection that fails).
	Faults *Faults
	Clock  clock.Clock
}

// UnservedTasks counts the queued tasks of one workflow version that no
// live worker can claim.
type UnservedTasks struct {
	Workflow, Version string
	Tasks             int
}

// newGauges creates the observable gauges: the engine's leadership, and,
// read from the store by the leader only (so that the series of all
// engines add up), the queue depth and running tasks per tenant and the
// stuck runs.
func (m *Metrics) newGauges(meter metric.Meter) error {
	var err error
	m.leader, err = meter.Int64ObservableGauge("trellis.engine.leader", metric.WithUnit("{leader}"),
		metric.WithDescription("1 while this engine leads (fires timers, recovers tasks, reports the queue gauges), else 0."))
	if err != nil {
		return err
	}
	m.queued, err = meter.Int64ObservableGauge("trellis.queue.depth", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks waiting to be claimed, per tenant (the 100 deepest; the rest as _other). Reported by the leader."))
	if err != nil {
		return err
	}
	m.running, err = meter.Int64ObservableGauge("trellis.task.running", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks running on any worker, per tenant (as trellis.queue.depth names them). Reported by the leader."))
	if err != nil {
		return err
	}
	m.waitingRuns, err = meter.Int64ObservableGauge("trellis.run.waiting", metric.WithUnit("{run}"),
		metric.WithDescription("Runs waiting for a slot of their workflow's runConcurrency key or for their debounce window, per workflow. Reported by the leader."))
	if err != nil {
		return err
	}
	m.stuck, err = meter.Int64ObservableGauge("trellis.run.stuck", metric.WithUnit("{run}"),
		metric.WithDescription("Runs making no progress for longer than Config.StuckAfter (at most 100). Reported by the leader."))
	if err != nil {
		return err
	}
	m.paused, err = meter.Int64ObservableGauge("trellis.workflow.paused", metric.WithUnit("{task}"),
		metric.WithDescription("Queued tasks each pause of a workflow holds, one series per pause (tenant _all: every tenant's). Reported by the leader."))
	if err != nil {
		return err
	}
	m.unserved, err = meter.Int64ObservableGauge("trellis.queue.unserved", metric.WithUnit("{task}"),
		metric.WithDescription("Queued tasks no live worker can claim, per workflow and version: no worker alive serves the version, or has the worker labels they need (version empty). Reported by the leader."))
	return err
}

// Observe starts observing the gauges from src, until the registration
// it returns (nil without metrics) is unregistered: the engine
// unregisters it when it stops, so that a MeterProvider outliving the
// engine holds nothing of it.
func (m *Metrics) Observe(src GaugeSource) (metric.Registration, error) {
	if m == nil {
		return nil, nil
	}
	reg, err := m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		o.ObserveInt64(m.leader, boolGauge(src.Leader()))
		if !src.Cluster() {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, gaugeTimeout)
		defer cancel()
		m.observeQueue(ctx, o, src)
		m.observePauses(ctx, o, src)
		m.observeWaitingRuns(ctx, o, src)
		m.observeUnserved(ctx, o, src)
		if src.StuckRuns != nil {
			n, err := src.StuckRuns(ctx)
			if src.read("stuck runs", err) {
				o.ObserveInt64(m.stuck, int64(n))
			}
		}
		return nil
	}, m.leader, m.queued, m.running, m.stuck, m.paused, m.waitingRuns, m.unserved)
	if err != nil {
		return nil, fmt.Errorf("engine: registering the metric gauges: %w", err)
	}
	return reg, nil
}

// observeQueue observes the queue gauges from one store read.
func (m *Metrics) observeQueue(ctx context.Context, o metric.Observer, src GaugeSource) {
	d, err := src.Store.QueueDepth(ctx, gaugeTenants)
	if !src.read("the queue depth", err) {
		return
	}
	restQueued, restRunning := d.Queued, d.Running
	for _, t := range d.Tenants {
		tenant := metric.WithAttributeSet(attribute.NewSet(attrTenant.String(t.Tenant)))
		o.ObserveInt64(m.queued, int64(t.Queued), tenant)
		o.ObserveInt64(m.running, int64(t.Running), tenant)
		restQueued -= t.Queued
		restRunning -= t.Running
	}
	// Always, so that an empty queue reads 0 rather than no series.
	other := metric.WithAttributeSet(attribute.NewSet(attrTenant.String(otherTenants)))
	o.ObserveInt64(m.queued, int64(restQueued), other)
	o.ObserveInt64(m.running, int64(restRunning), other)
}

// observePauses observes the tasks each pause holds. Pauses are few
// (operators make them), so each gets its series.
func (m *Metrics) observePauses(ctx context.Context, o metric.Observer, src GaugeSource) {
	pauses, err := src.Store.ListPauses(ctx)
	if !src.read("the paused workflows", err) {
		return
	}
	for _, p := range pauses {
		tenant := p.Tenant
		if tenant == "" {
			tenant = allTenants
		}
		o.ObserveInt64(m.paused, int64(p.Queued), metric.WithAttributes(attrWorkflow.String(p.Workflow), attrTenant.String(tenant)))
	}
}

// observeWaitingRuns observes the runs waiting for a run slot, per
// workflow: those the store counts, and 0 for the workflows it counted
// before.
func (m *Metrics) observeWaitingRuns(ctx context.Context, o metric.Observer, src GaugeSource) {
	n, err := src.Store.WaitingRuns(ctx)
	if !src.read("the waiting runs", err) {
		return
	}
	m.waitedMu.Lock()
	defer m.waitedMu.Unlock()
	if m.waitedIn == nil {
		m.waitedIn = map[string]bool{}
	}
	for w := range n {
		m.waitedIn[w] = true
	}
	for w := range m.waitedIn {
		o.ObserveInt64(m.waitingRuns, int64(n[w]), metric.WithAttributeSet(attribute.NewSet(attrWorkflow.String(w))))
	}
}

// observeUnserved observes the queued tasks no live worker can claim, per
// workflow version: those counted now, and 0 for the versions counted
// before.
func (m *Metrics) observeUnserved(ctx context.Context, o metric.Observer, src GaugeSource) {
	if src.Unserved == nil {
		return
	}
	u, err := src.Unserved(ctx)
	if !src.read("the unserved tasks", err) {
		return
	}
	m.waitedMu.Lock()
	defer m.waitedMu.Unlock()
	if m.unservedIn == nil {
		m.unservedIn = map[[2]string]bool{}
	}
	n := map[[2]string]int{}
	for _, t := range u {
		k := [2]string{t.Workflow, t.Version}
		n[k] += t.Tasks
		m.unservedIn[k] = true
	}
	for k := range m.unservedIn {
		o.ObserveInt64(m.unserved, int64(n[k]), metric.WithAttributeSet(attribute.NewSet(attrWorkflow.String(k[0]), attrVersion.String(k[1]))))
	}
}

// read reports whether a store read for the gauges worked, logging a
// failure once per outage.
func (src GaugeSource) read(what string, err error) bool {
	op := "reading " + what + " for metrics"
	if err != nil {
		src.Faults.Failed(op, err, src.Clock.Now())
		return false
	}
	src.Faults.OK(op, src.Clock.Now())
	return true
}

func boolGauge(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
