package telemetry

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/effectivelabs/trellis/runtime/store"
)

// InstrumentationName names the engine's meter and tracer (the
// instrumentation scope, in OpenTelemetry's words).
const InstrumentationName = "github.com/effectivelabs/trellis/runtime"

// Attribute keys of the engine's metrics and spans. They are namespaced
// under trellis., as OpenTelemetry's semantic conventions ask of
// attributes outside them.
const (
	attrWorkflow    = attribute.Key("trellis.workflow.name")
	attrVersion     = attribute.Key("trellis.workflow.version")
	attrStep        = attribute.Key("trellis.step.name")
	attrTenant      = attribute.Key("trellis.tenant.id")
	attrRunID       = attribute.Key("trellis.run.id")
	attrRunCount    = attribute.Key("trellis.run.count")
	attrRunOutcome  = attribute.Key("trellis.run.outcome")
	attrAttempt     = attribute.Key("trellis.task.attempt")
	attrTaskOutcome = attribute.Key("trellis.task.outcome")
	attrTimerKind   = attribute.Key("trellis.timer.kind")
	attrRunStatus   = attribute.Key("trellis.run.status")
	// attrRunTagPrefix, followed by a tag's key, names a run's tag.
	attrRunTagPrefix = "trellis.run.tag."
)

// TagAttributes are a run's tags as attributes, trellis.run.tag.<key>,
// by key; keys, when not nil, names the only tags to include.
func TagAttributes(tags map[string]string, keys []string) []attribute.KeyValue {
	var kv []attribute.KeyValue
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if keys == nil || slices.Contains(keys, k) {
			kv = append(kv, attribute.String(attrRunTagPrefix+k, tags[k]))
		}
	}
	return kv
}

// Outcomes: the values of trellis.run.outcome and trellis.task.outcome.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
	OutcomeRetried   = "retried"
	OutcomeSkipped   = "skipped"
	// OutcomeDropped is a step attempt whose result was not recorded: its
	// run ended meanwhile, its task was taken over, or the engine stopped.
	// Only spans carry it.
	OutcomeDropped = "dropped"
)

// finishedStatuses are the statuses a run ends in.
var finishedStatuses = [...]store.RunStatus{store.RunCompleted, store.RunFailed, store.RunCancelled}

// Metrics holds the engine's instruments; an engine without a
// MeterProvider has none (a nil *Metrics), and pays a nil check: every
// recording method does nothing on a nil *Metrics.
type Metrics struct {
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
	purgedStatus  map[store.RunStatus]metric.MeasurementOption
	// The gauges, observed while the engine is started or driven.
	leader, queued, running, stuck, paused metric.Int64ObservableGauge
	waitingRuns, unserved                  metric.Int64ObservableGauge
	// waitedIn are the workflows trellis.run.waiting has reported runs
	// of, so that it reports 0 for them, rather than nothing, once their
	// runs stopped waiting.
	waitedMu sync.Mutex
	waitedIn map[string]bool
	// unservedIn are the workflow versions trellis.queue.unserved has
	// reported, so that it reports 0 for them once served (under
	// waitedMu).
	unservedIn map[[2]string]bool

	// tagKeys are the run tags the runs-started counter carries.
	tagKeys []string
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

// NewMetrics creates the instruments on mp; tenants adds the tenant to
// the run and task instruments, tagKeys the run tags of these keys to
// the runs-started counter. A nil mp means no metrics: it returns
// nil.
func NewMetrics(mp metric.MeterProvider, tenants bool, tagKeys []string) (*Metrics, error) {
	if mp == nil {
		return nil, nil
	}
	meter := mp.Meter(InstrumentationName)
	m := &Metrics{meter: meter, tenants: tenants, tagKeys: slices.Clone(tagKeys)}
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
	m.purgedStatus = map[store.RunStatus]metric.MeasurementOption{}
	for _, st := range finishedStatuses {
		m.purgedStatus[st] = metric.WithAttributeSet(attribute.NewSet(attrRunStatus.String(strings.ToLower(string(st)))))
	}
	if err := m.newGauges(meter); err != nil {
		return nil, fmt.Errorf("runtime.Config: MeterProvider: %w", err)
	}
	return m, nil
}

// stepSets returns the cached attribute sets of a step.
func (m *Metrics) stepSets(workflow, step string) *stepSets {
	k := stepKey{workflow, step}
	if s, ok := m.steps.Load(k); ok {
		return s.(*stepSets)
	}
	base := []attribute.KeyValue{attrWorkflow.String(workflow), attrStep.String(step)}
	s := &stepSets{
		step:     metric.WithAttributeSet(attribute.NewSet(base...)),
		outcomes: make(map[string]metric.MeasurementOption, 4),
	}
	for _, o := range []string{OutcomeCompleted, OutcomeFailed, OutcomeRetried, OutcomeSkipped} {
		s.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(append(base[:2:2], attrTaskOutcome.String(o))...))
	}
	got, _ := m.steps.LoadOrStore(k, s)
	return got.(*stepSets)
}

// stepAttrs returns the attributes of a step's measurement: workflow and
// step, with outcome unless it is empty, and the tenant when asked for.
func (m *Metrics) stepAttrs(workflow, step, tenant, outcome string) metric.MeasurementOption {
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
func (m *Metrics) runAttrs(workflow, tenant, outcome string) metric.MeasurementOption {
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
		for _, o := range []string{OutcomeCompleted, OutcomeFailed, OutcomeCancelled} {
			rs.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(base, attrRunOutcome.String(o)))
		}
		r, _ = m.runs.LoadOrStore(workflow, rs)
	}
	if outcome == "" {
		return r.(*runSets).workflow
	}
	return r.(*runSets).outcomes[outcome]
}

// RunsStarted counts runs a trigger created, with the tags of theirs
// whose keys the engine's MetricTagKeys name.
func (m *Metrics) RunsStarted(ctx context.Context, workflow, tenant string, n int, tags map[string]string) {
	if m == nil || n <= 0 {
		return
	}
	if len(m.tagKeys) > 0 && len(tags) > 0 {
		if kv := TagAttributes(tags, m.tagKeys); len(kv) > 0 {
			kv = append(kv, attrWorkflow.String(workflow))
			if m.tenants {
				kv = append(kv, attrTenant.String(tenant))
			}
			m.runStarted.Add(ctx, int64(n), metric.WithAttributeSet(attribute.NewSet(kv...)))
			return
		}
	}
	m.runStarted.Add(ctx, int64(n), m.runAttrs(workflow, tenant, ""))
}

// RunFinished counts a run that ended with outcome (completed, failed,
// cancelled).
func (m *Metrics) RunFinished(ctx context.Context, workflow, tenant, outcome string) {
	if m != nil {
		m.runFinished.Add(ctx, 1, m.runAttrs(workflow, tenant, outcome))
	}
}

// RunsPurged counts runs of a status that were deleted.
func (m *Metrics) RunsPurged(ctx context.Context, status store.RunStatus, n int) {
	if m == nil || n <= 0 {
		return
	}
	if attrs, ok := m.purgedStatus[status]; ok {
		m.runPurged.Add(ctx, int64(n), attrs)
	}
}

// HandedOff counts tasks handed to this engine by a Finish.
func (m *Metrics) HandedOff(ctx context.Context, n int) {
	if m == nil {
		return
	}
	m.handOffs.Add(ctx, int64(n))
}

// RefusedStale counts results the store refused as stale.
func (m *Metrics) RefusedStale(ctx context.Context, n int) {
	if m == nil || n == 0 {
		return
	}
	m.staleResults.Add(ctx, int64(n))
}

// Quarantine counts a task failed because the store refused its data.
func (m *Metrics) Quarantine(ctx context.Context, workflow, tenant string) {
	if m == nil {
		return
	}
	m.quarantined.Add(ctx, 1, metric.WithAttributes(attrWorkflow.String(workflow), attrTenant.String(tenant)))
}

// Claimed records a claim: how long it took and how many tasks it took.
func (m *Metrics) Claimed(ctx context.Context, took time.Duration, n int) {
	if m == nil {
		return
	}
	m.claimDuration.Record(ctx, took.Seconds())
	m.claimSize.Record(ctx, int64(n))
}

// TaskEnded counts a task result: a step attempt's end (completed,
// failed for good, to be retried) or a step that did not need to run
// (skipped).
func (m *Metrics) TaskEnded(ctx context.Context, workflow, step, tenant, outcome string) {
	if m == nil {
		return
	}
	m.taskFinished.Add(ctx, 1, m.stepAttrs(workflow, step, tenant, outcome))
}

// QueueWait records how long a claimed task of a step waited in the
// queue, from queuedAt (zero: not known, nothing is recorded) to its
// claim at claimedAt.
func (m *Metrics) QueueWait(ctx context.Context, workflow, step, tenant string, queuedAt, claimedAt time.Time) {
	if m == nil || queuedAt.IsZero() {
		return
	}
	m.taskWait.Record(ctx, max(claimedAt.Sub(queuedAt), 0).Seconds(), m.stepAttrs(workflow, step, tenant, ""))
}

// StepStarted counts a step attempt whose code starts.
func (m *Metrics) StepStarted(ctx context.Context, a Attempt) {
	if m == nil {
		return
	}
	m.taskStarted.Add(ctx, 1, m.stepAttrs(a.Workflow, a.Step, a.Tenant, ""))
}

// StepRan records a step attempt's code that ran for took and ended
// with outcome (completed, failed, retried).
func (m *Metrics) StepRan(ctx context.Context, a Attempt, took time.Duration, outcome string) {
	if m == nil {
		return
	}
	attrs := m.stepAttrs(a.Workflow, a.Step, a.Tenant, outcome)
	m.taskDuration.Record(ctx, took.Seconds(), attrs)
	m.taskFinished.Add(ctx, 1, attrs)
}

// TimersFired records how late each fired timer fired at now.
func (m *Metrics) TimersFired(ctx context.Context, fired []store.FiredTimer, now time.Time) {
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
