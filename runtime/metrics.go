package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/effectivelabs/trellis/runtime/store"
)

// instrumentationName names the engine's meter and tracer (the
// instrumentation scope, in OpenTelemetry's words).
const instrumentationName = "github.com/effectivelabs/trellis/runtime"

// Attribute keys of the engine's metrics and spans. They are namespaced
// under trellis., as OpenTelemetry's semantic conventions ask of
// attributes outside them.
const (
	attrWorkflow    = attribute.Key("trellis.workflow.name")
	attrStep        = attribute.Key("trellis.step.name")
	attrTenant      = attribute.Key("trellis.tenant.id")
	attrRunID       = attribute.Key("trellis.run.id")
	attrRunCount    = attribute.Key("trellis.run.count")
	attrRunOutcome  = attribute.Key("trellis.run.outcome")
	attrAttempt     = attribute.Key("trellis.task.attempt")
	attrTaskOutcome = attribute.Key("trellis.task.outcome")
	attrTimerKind   = attribute.Key("trellis.timer.kind")
	attrRunStatus   = attribute.Key("trellis.run.status")
)

// Outcomes: the values of trellis.run.outcome and trellis.task.outcome.
const (
	outcomeCompleted = "completed"
	outcomeFailed    = "failed"
	outcomeCancelled = "cancelled"
	outcomeRetried   = "retried"
	outcomeSkipped   = "skipped"
	// outcomeDropped is a step attempt whose result was not recorded: its
	// run ended meanwhile, its task was taken over, or the engine stopped.
	// Only spans carry it.
	outcomeDropped = "dropped"
)

// gaugeTenants bounds the tenants the queue gauges name: the ones with
// the most queued tasks. The tasks of the others are reported under
// otherTenants (0 when there are none), so that the series of a gauge
// still add up to the whole queue however many tenants there are, and an
// empty queue reads 0 rather than nothing.
const (
	gaugeTenants = 100
	otherTenants = "_other"
)

// gaugeTimeout bounds the store reads of one collection of the gauges.
const gaugeTimeout = 5 * time.Second

// metrics holds the engine's instruments; an engine without a
// MeterProvider has none (a nil *metrics), and pays a nil check.
type metrics struct {
	meter         metric.Meter
	runStarted    metric.Int64Counter
	runFinished   metric.Int64Counter
	runPurged     metric.Int64Counter
	taskStarted   metric.Int64Counter
	taskFinished  metric.Int64Counter
	taskDuration  metric.Float64Histogram
	taskWait      metric.Float64Histogram
	claimDuration metric.Float64Histogram
	claimSize     metric.Int64Histogram
	handOffs      metric.Int64Counter
	staleResults  metric.Int64Counter
	quarantined   metric.Int64Counter
	timerLateness metric.Float64Histogram
	timerKinds    [2]metric.MeasurementOption // retry, sleep
	purgedStatus  map[RunStatus]metric.MeasurementOption
	// The gauges, observed while the engine is started or driven.
	leader, queued, running, stuck metric.Int64ObservableGauge

	// tenants adds trellis.tenant.id to the run and task instruments
	// (Config.TenantMetrics); their attribute sets are then built per
	// measurement instead of cached.
	tenants bool
	steps   sync.Map // stepKey -> *stepSets
	runs    sync.Map // workflow name -> *runSets
}

type stepKey struct{ workflow, step string }

// stepSets are the attribute sets of one step's measurements, made once.
type stepSets struct {
	step     metric.MeasurementOption            // workflow, step
	outcomes map[string]metric.MeasurementOption // workflow, step, outcome
}

// runSets are the attribute sets of one workflow's run measurements.
type runSets struct {
	workflow metric.MeasurementOption            // workflow
	outcomes map[string]metric.MeasurementOption // workflow, outcome
}

// durationBuckets are the bucket bounds, in seconds, of the duration
// histograms: from a millisecond (a no-op step, a claim) to an hour.
func durationBuckets() []float64 {
	return []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
}

// newMetrics creates the instruments on mp.
func newMetrics(e *Engine, mp metric.MeterProvider) (*metrics, error) {
	meter := mp.Meter(instrumentationName)
	m := &metrics{meter: meter, tenants: e.cfg.TenantMetrics}
	var err error
	counter := func(name, unit, desc string) metric.Int64Counter {
		var c metric.Int64Counter
		if err == nil {
			c, err = meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		}
		return c
	}
	seconds := func(name, desc string) metric.Float64Histogram {
		var h metric.Float64Histogram
		if err == nil {
			h, err = meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
				metric.WithExplicitBucketBoundaries(durationBuckets()...))
		}
		return h
	}
	m.runStarted = counter("trellis.run.started", "{run}", "Runs created by triggers of this engine.")
	m.runFinished = counter("trellis.run.finished", "{run}", "Runs that ended, by outcome, as seen by the engine that ended them.")
	m.runPurged = counter("trellis.run.purged", "{run}", "Finished runs this engine deleted, past their retention or asked to (Engine.PurgeRuns), by the status they ended in.")
	m.taskStarted = counter("trellis.task.started", "{task}", "Step attempts whose code started.")
	m.taskFinished = counter("trellis.task.finished", "{task}", "Task results: attempts that completed, failed for good or will be retried, and skipped steps.")
	m.taskDuration = seconds("trellis.task.duration", "How long a step attempt's code ran.")
	m.taskWait = seconds("trellis.task.wait_time", "How long a task waited in the ready queue before a worker claimed it.")
	m.claimDuration = seconds("trellis.claim.duration", "How long one claim of ready tasks took.")
	m.handOffs = counter("trellis.task.handed_off", "{task}", "Tasks the store handed straight to this engine as their parents' results were recorded, without a claim.")
	m.staleResults = counter("trellis.task.stale_results", "{result}", "Results the store refused because their attempt no longer held its task (its run ended, or the task was recovered or handed back and claimed again): a result counts only for the attempt that holds the task.")
	m.quarantined = counter("trellis.task.quarantined", "{task}", "Tasks failed without retries because the store could not take their own data: a claim, start or result it refused for that task alone, so that the task held up no other.")
	m.timerLateness = seconds("trellis.timer.lateness", "How late a durable timer (a sleep's end, a retry's backoff) fired.")
	if err == nil {
		m.claimSize, err = meter.Int64Histogram("trellis.claim.size", metric.WithUnit("{task}"),
			metric.WithDescription("Tasks taken by one claim."),
			metric.WithExplicitBucketBoundaries(0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000))
	}
	if err != nil {
		return nil, fmt.Errorf("runtime.Config: MeterProvider: %w", err)
	}
	m.timerKinds = [2]metric.MeasurementOption{
		metric.WithAttributeSet(attribute.NewSet(attrTimerKind.String("retry"))),
		metric.WithAttributeSet(attribute.NewSet(attrTimerKind.String("sleep"))),
	}
	m.purgedStatus = map[RunStatus]metric.MeasurementOption{}
	for _, st := range FinishedStatuses() {
		m.purgedStatus[st] = metric.WithAttributeSet(attribute.NewSet(attrRunStatus.String(strings.ToLower(string(st)))))
	}
	if err := m.newGauges(meter); err != nil {
		return nil, fmt.Errorf("runtime.Config: MeterProvider: %w", err)
	}
	return m, nil
}

// stepSets returns the cached attribute sets of a step.
func (m *metrics) stepSets(workflow, step string) *stepSets {
	k := stepKey{workflow, step}
	if s, ok := m.steps.Load(k); ok {
		return s.(*stepSets)
	}
	base := []attribute.KeyValue{attrWorkflow.String(workflow), attrStep.String(step)}
	s := &stepSets{
		step:     metric.WithAttributeSet(attribute.NewSet(base...)),
		outcomes: make(map[string]metric.MeasurementOption, 4),
	}
	for _, o := range []string{outcomeCompleted, outcomeFailed, outcomeRetried, outcomeSkipped} {
		s.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(append(base[:2:2], attrTaskOutcome.String(o))...))
	}
	got, _ := m.steps.LoadOrStore(k, s)
	return got.(*stepSets)
}

// stepAttrs returns the attributes of a step's measurement: workflow and
// step, with outcome unless it is empty, and the tenant when asked for.
func (m *metrics) stepAttrs(workflow, step, tenant, outcome string) metric.MeasurementOption {
	if !m.tenants {
		s := m.stepSets(workflow, step)
		if outcome == "" {
			return s.step
		}
		return s.outcomes[outcome]
	}
	kv := []attribute.KeyValue{attrWorkflow.String(workflow), attrStep.String(step), attrTenant.String(tenant)}
	if outcome != "" {
		kv = append(kv, attrTaskOutcome.String(outcome))
	}
	return metric.WithAttributeSet(attribute.NewSet(kv...))
}

// runAttrs returns the attributes of a run's measurement, like stepAttrs.
func (m *metrics) runAttrs(workflow, tenant, outcome string) metric.MeasurementOption {
	if m.tenants {
		kv := []attribute.KeyValue{attrWorkflow.String(workflow), attrTenant.String(tenant)}
		if outcome != "" {
			kv = append(kv, attrRunOutcome.String(outcome))
		}
		return metric.WithAttributeSet(attribute.NewSet(kv...))
	}
	r, ok := m.runs.Load(workflow)
	if !ok {
		base := attrWorkflow.String(workflow)
		rs := &runSets{workflow: metric.WithAttributeSet(attribute.NewSet(base)), outcomes: map[string]metric.MeasurementOption{}}
		for _, o := range []string{outcomeCompleted, outcomeFailed, outcomeCancelled} {
			rs.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(base, attrRunOutcome.String(o)))
		}
		r, _ = m.runs.LoadOrStore(workflow, rs)
	}
	if outcome == "" {
		return r.(*runSets).workflow
	}
	return r.(*runSets).outcomes[outcome]
}

// The recording methods below do nothing on a nil *metrics (an engine
// without a MeterProvider), so that the pipeline calls them unguarded.

// runsStarted counts runs a trigger created.
func (m *metrics) runsStarted(ctx context.Context, workflow, tenant string, n int) {
	if m != nil && n > 0 {
		m.runStarted.Add(ctx, int64(n), m.runAttrs(workflow, tenant, ""))
	}
}

// runsPurged counts runs of a status that were deleted.
func (m *metrics) runsPurged(ctx context.Context, status RunStatus, n int) {
	if m == nil || n <= 0 {
		return
	}
	if attrs, ok := m.purgedStatus[status]; ok {
		m.runPurged.Add(ctx, int64(n), attrs)
	}
}

// handedOff counts tasks handed to this engine by a Finish.
func (m *metrics) handedOff(ctx context.Context, n int) {
	if m == nil {
		return
	}
	m.handOffs.Add(ctx, int64(n))
}

// refusedStale counts results the store refused as stale.
func (m *metrics) refusedStale(ctx context.Context, n int) {
	if m == nil || n == 0 {
		return
	}
	m.staleResults.Add(ctx, int64(n))
}

// quarantine counts a task failed because the store refused its data.
func (m *metrics) quarantine(ctx context.Context, workflow, tenant string) {
	if m == nil {
		return
	}
	m.quarantined.Add(ctx, 1, metric.WithAttributes(attrWorkflow.String(workflow), attrTenant.String(tenant)))
}

// claimed records a claim: how long it took and how many tasks it took.
func (m *metrics) claimed(ctx context.Context, took time.Duration, n int) {
	if m == nil {
		return
	}
	m.claimDuration.Record(ctx, took.Seconds())
	m.claimSize.Record(ctx, int64(n))
}

// taskEnded counts a task result: a step attempt's end (completed,
// failed for good, to be retried) or a step that did not need to run
// (skipped).
func (m *metrics) taskEnded(ctx context.Context, workflow, step, tenant, outcome string) {
	if m == nil {
		return
	}
	m.taskFinished.Add(ctx, 1, m.stepAttrs(workflow, step, tenant, outcome))
}

// queueWait records how long a claimed task waited in the queue, up to
// its claim at claimedAt.
func (m *metrics) queueWait(ctx context.Context, c store.ClaimedTask, step string, claimedAt time.Time) {
	if m == nil || c.QueuedAt.IsZero() {
		return
	}
	m.taskWait.Record(ctx, max(claimedAt.Sub(c.QueuedAt), 0).Seconds(), m.stepAttrs(c.Workflow, step, c.Tenant, ""))
}

// stepRan records a step attempt's code that ran for took and ended
// with outcome (completed, failed, retried).
func (m *metrics) stepRan(ctx context.Context, info StepInfo, took time.Duration, outcome string) {
	if m == nil {
		return
	}
	attrs := m.stepAttrs(info.Workflow, info.Step, info.Tenant, outcome)
	m.taskDuration.Record(ctx, took.Seconds(), attrs)
	m.taskFinished.Add(ctx, 1, attrs)
}

// stepStarted counts a step attempt whose code starts.
func (m *metrics) stepStarted(ctx context.Context, info StepInfo) {
	if m == nil {
		return
	}
	m.taskStarted.Add(ctx, 1, m.stepAttrs(info.Workflow, info.Step, info.Tenant, ""))
}

// timersFired records how late each fired timer fired at now.
func (m *metrics) timersFired(ctx context.Context, fired []store.FiredTimer, now time.Time) {
	if m == nil {
		return
	}
	for _, t := range fired {
		kind := m.timerKinds[0]
		if t.Sleep {
			kind = m.timerKinds[1]
		}
		m.timerLateness.Record(ctx, max(now.Sub(t.Due), 0).Seconds(), kind)
	}
}

// newGauges creates the observable gauges: the engine's leadership, and,
// read from the store by the leader only (so that the series of all
// engines add up), the queue depth and running tasks per tenant and the
// stuck runs.
func (m *metrics) newGauges(meter metric.Meter) error {
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
	m.stuck, err = meter.Int64ObservableGauge("trellis.run.stuck", metric.WithUnit("{run}"),
		metric.WithDescription("Runs making no progress for longer than Config.StuckAfter (at most 100). Reported by the leader."))
	if err != nil {
		return err
	}
	return err
}

// observe registers the gauges' callback, which reads e. The engine
// unregisters it when it stops, so that a MeterProvider outliving the
// engine holds nothing of it.
func (m *metrics) observe(e *Engine) (metric.Registration, error) {
	return m.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		o.ObserveInt64(m.leader, boolGauge(e.IsLeader()))
		if !e.reportsCluster() {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, gaugeTimeout)
		defer cancel()
		e.observeQueue(ctx, o, m.queued, m.running)
		if e.cfg.StuckAfter > 0 {
			runs, err := e.StuckRuns(ctx)
			if e.gaugeRead("stuck runs", err) {
				o.ObserveInt64(m.stuck, int64(len(runs)))
			}
		}
		return nil
	}, m.leader, m.queued, m.running, m.stuck)
}

// observeQueue observes the queue gauges from one store read.
func (e *Engine) observeQueue(ctx context.Context, o metric.Observer, queued, running metric.Int64Observable) {
	d, err := e.store.QueueDepth(ctx, gaugeTenants)
	if !e.gaugeRead("the queue depth", err) {
		return
	}
	restQueued, restRunning := d.Queued, d.Running
	for _, t := range d.Tenants {
		tenant := metric.WithAttributeSet(attribute.NewSet(attrTenant.String(t.Tenant)))
		o.ObserveInt64(queued, int64(t.Queued), tenant)
		o.ObserveInt64(running, int64(t.Running), tenant)
		restQueued -= t.Queued
		restRunning -= t.Running
	}
	// Always, so that an empty queue reads 0 rather than no series.
	other := metric.WithAttributeSet(attribute.NewSet(attrTenant.String(otherTenants)))
	o.ObserveInt64(queued, int64(restQueued), other)
	o.ObserveInt64(running, int64(restRunning), other)
}

// gaugeRead reports whether a store read for the gauges worked, logging a
// failure once per outage (a gauge without a value is better than a
// collection that fails).
func (e *Engine) gaugeRead(what string, err error) bool {
	op := "reading " + what + " for metrics"
	if err != nil {
		e.faults.failed(op, err, e.clock.Now())
		return false
	}
	e.faults.ok(op, e.clock.Now())
	return true
}

// observeGauges starts observing the gauges, until the registration it
// returns (nil without metrics) is unregistered.
func (e *Engine) observeGauges() (metric.Registration, error) {
	if e.metrics == nil {
		return nil, nil
	}
	reg, err := e.metrics.observe(e)
	if err != nil {
		return nil, fmt.Errorf("engine: registering the metric gauges: %w", err)
	}
	return reg, nil
}

// reportsCluster reports whether this engine reports the gauges read from
// the store: it leads, or a Driver runs it (a test's engine, which does
// the leader's work itself).
func (e *Engine) reportsCluster() bool {
	if e.leader.Load() {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.driver != nil
}

func boolGauge(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
