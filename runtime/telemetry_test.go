package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// These tests read what an engine with OpenTelemetry on exports, through
// the SDK's in-memory exporter and manual metric reader: the metric
// values, the spans and how they link, and the log attributes.

// telemetry is an SDK set up to keep what it is given.
type telemetry struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
}

func newTelemetry(t *testing.T) *telemetry {
	tel := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewInMemoryExporter()}
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tel.spans))
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = tel.mp.Shutdown(ctx)
		_ = tel.tp.Shutdown(ctx)
	})
	return tel
}

func (tel *telemetry) configure(c *runtime.Config) {
	c.MeterProvider, c.TracerProvider = tel.mp, tel.tp
}

// metrics collects the metrics now.
func (tel *telemetry) metrics(t *testing.T) metricSet {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	out := metricSet{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/effectivelabs/trellis/runtime" {
			t.Errorf("metrics of scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// metricSet is one collection, by metric name.
type metricSet map[string]metricdata.Metrics

// sum adds up the values of a counter or gauge's points whose attributes
// include attrs ("key=value"), and reports whether any matched.
func (ms metricSet) sum(t *testing.T, name string, attrs ...string) int64 {
	t.Helper()
	var total int64
	switch d := ms[name].Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if hasAttrs(p.Attributes, attrs) {
				total += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if hasAttrs(p.Attributes, attrs) {
				total += p.Value
			}
		}
	case nil:
		t.Fatalf("no metric %s", name)
	default:
		t.Fatalf("metric %s is a %T", name, d)
	}
	return total
}

// histogram returns the count and sum of a histogram's points whose
// attributes include attrs.
func (ms metricSet) histogram(t *testing.T, name string, attrs ...string) (uint64, float64) {
	t.Helper()
	var count uint64
	var sum float64
	switch d := ms[name].Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if hasAttrs(p.Attributes, attrs) {
				count, sum = count+p.Count, sum+p.Sum
			}
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			if hasAttrs(p.Attributes, attrs) {
				count, sum = count+p.Count, sum+float64(p.Sum)
			}
		}
	default:
		t.Fatalf("metric %s is a %T, want a histogram", name, d)
	}
	return count, sum
}

func hasAttrs(set attribute.Set, attrs []string) bool {
	for _, a := range attrs {
		k, v, _ := strings.Cut(a, "=")
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.Emit() != v {
			return false
		}
	}
	return true
}

// captured is a slog handler that keeps records with their attributes.
type captured struct {
	mu    sync.Mutex
	lines []map[string]string
	attrs []slog.Attr
}

func (c *captured) Enabled(context.Context, slog.Level) bool { return true }

func (c *captured) Handle(_ context.Context, r slog.Record) error {
	line := map[string]string{"msg": r.Message}
	for _, a := range c.attrs {
		line[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { line[a.Key] = a.Value.String(); return true })
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, line)
	return nil
}

func (c *captured) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &capturedWith{c: c, attrs: attrs}
}

func (c *captured) WithGroup(string) slog.Handler { return c }

// capturedWith is a captured handler with attributes of its own.
type capturedWith struct {
	c     *captured
	attrs []slog.Attr
}

func (w *capturedWith) Enabled(context.Context, slog.Level) bool { return true }
func (w *capturedWith) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(w.attrs...)
	return w.c.Handle(ctx, r)
}
func (w *capturedWith) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &capturedWith{c: w.c, attrs: append(slices.Clone(w.attrs), attrs...)}
}
func (w *capturedWith) WithGroup(string) slog.Handler { return w }

// line returns the first captured line with message msg.
func (c *captured) line(t *testing.T, msg string) map[string]string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if l["msg"] == msg {
			return l
		}
	}
	t.Fatalf("no log line %q", msg)
	return nil
}

// shopSpec: validate -> (charge, reject), charge -> nap (1h) -> ship <-
// reject. reject is skipped when validate says ok; charge retries after
// a minute.
func shopSpec() *runtime.WorkflowSpec {
	return &runtime.WorkflowSpec{
		Name:        "shop",
		InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{
			{Name: "validate", OutputSchema: `{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`},
			{Name: "charge", Parents: []string{"validate"},
				Retry: runtime.RetryPolicy{MaxRetries: 2, InitialDelay: time.Minute, BackoffFactor: 2, MaxDelay: time.Hour}},
			{Name: "reject", Parents: []string{"validate"}, SkipIf: []string{"parents.validate.ok"}},
			{Name: "nap", Parents: []string{"charge"}, Sleep: time.Hour},
			{Name: "ship", Parents: []string{"nap", "reject"}},
		},
	}
}

// shopSteps is the code of shopSpec. validate takes two seconds of the
// virtual clock; charge fails its first attempt; ship logs through
// stepLog and starts a span of its own.
type shopSteps struct {
	advance func(time.Duration)
	stepLog *slog.Logger
	tracer  trace.Tracer
}

func (s *shopSteps) handlers() runtime.Handlers {
	return runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"validate": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			s.advance(2 * time.Second)
			return json.RawMessage(`{"ok":true}`), nil
		},
		"charge": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			if req.Info.Attempt == 1 {
				return nil, errors.New("card declined for now")
			}
			return nil, nil
		},
		"reject": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return nil, errors.New("reject must be skipped")
		},
		"ship": func(ctx context.Context, _ *runtime.StepRequest) (json.RawMessage, error) {
			s.stepLog.InfoContext(ctx, "shipping")
			if s.tracer != nil {
				_, span := s.tracer.Start(ctx, "carrier api")
				span.End()
			}
			return nil, nil
		},
	}}
}

func TestTelemetryOnTestKit(t *testing.T) {
	tel := newTelemetry(t)
	var engineLog, stepLog captured
	h := trellistest.New(t, trellistest.WithConfig(func(c *runtime.Config) {
		tel.configure(c)
		c.Logger = slog.New(&engineLog)
	}))
	steps := &shopSteps{advance: h.Clock.Advance, stepLog: slog.New(runtime.NewLogHandler(&stepLog)), tracer: tel.tp.Tracer("test")}
	shop, err := h.Engine.Register(shopSpec(), steps.handlers())
	if err != nil {
		t.Fatal(err)
	}

	// Triggered inside a request's span, the run continues its trace.
	ctx, request := tel.tp.Tracer("test").Start(t.Context(), "POST /orders")
	ref, err := shop.Trigger(ctx, nil, runtime.WithTenant("acme"))
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	ms := tel.metrics(t)
	if got := ms.sum(t, "trellis.queue.depth", "trellis.tenant.id=acme"); got != 1 {
		t.Errorf("queue depth of acme after the trigger = %d, want 1", got)
	}
	if got := ms.sum(t, "trellis.run.stuck"); got != 0 {
		t.Errorf("stuck runs = %d, want 0", got)
	}
	if got := ms.sum(t, "trellis.engine.leader"); got != 0 {
		t.Errorf("a driven engine reported leadership %d", got)
	}

	h.RunUntilIdle()                  // validate, reject skipped, charge's first attempt fails
	h.Clock.Advance(90 * time.Second) // the retry timer is due at 1m: it fires 30s late
	h.RunUntilIdle()
	h.Settle() // the nap, then ship
	if res := h.Result(ref.ID); res.Status != runtime.RunCompleted {
		t.Fatalf("run %s, want COMPLETED: %+v", res.Status, res)
	}

	ms = tel.metrics(t)
	checkShopMetrics(t, ms, ms)
	if got := ms.sum(t, "trellis.task.finished", "trellis.tenant.id=acme"); got != 0 {
		t.Errorf("without TenantMetrics, %d task results name their tenant", got)
	}
	if n, sum := ms.histogram(t, "trellis.task.duration", "trellis.step.name=validate"); n != 1 || sum != 2 {
		t.Errorf("validate's duration: %d attempts taking %vs, want 1 taking 2s (of the virtual clock)", n, sum)
	}
	if n, sum := ms.histogram(t, "trellis.timer.lateness", "trellis.timer.kind=retry"); n != 1 || sum != 30 {
		t.Errorf("retry timer lateness: %d timers, %vs, want 1, 30s", n, sum)
	}
	if n, _ := ms.histogram(t, "trellis.timer.lateness", "trellis.timer.kind=sleep"); n != 1 {
		t.Errorf("sleep timers fired: %d, want 1", n)
	}
	if n, sum := ms.histogram(t, "trellis.task.wait_time", "trellis.step.name=charge"); n != 2 || sum != 0 {
		t.Errorf("charge's queue waits: %d, total %vs, want 2 claims at once", n, sum)
	}

	spans := tel.spans.GetSpans()
	trigger := checkShopSpans(t, spans, request.SpanContext(), ref.ID)
	// The step's own span nests in the attempt's.
	ship := findSpans(spans, "trellis.step shop/ship")[0]
	carrier := findSpans(spans, "carrier api")
	if len(carrier) != 1 || carrier[0].Parent.SpanID() != ship.SpanContext.SpanID() {
		t.Errorf("the span ship started: %+v, want a child of ship's span %s", carrier, ship.SpanContext.SpanID())
	}
	if trigger.StartTime != h.Start {
		t.Errorf("trigger span starts at %v, want the engine's clock %v", trigger.StartTime, h.Start)
	}

	// Logs: the engine's line about a task, and the step's own line.
	want := map[string]string{"run_id": ref.ID.String(), "workflow": "shop", "step": "charge", "attempt": "1", "tenant": "acme"}
	checkLine(t, engineLog.line(t, "step failed; will retry"), want)
	want = map[string]string{"run_id": ref.ID.String(), "workflow": "shop", "step": "ship", "attempt": "1", "tenant": "acme",
		"trace_id": request.SpanContext().TraceID().String(), "span_id": ship.SpanContext.SpanID().String()}
	checkLine(t, stepLog.line(t, "shipping"), want)
}

// checkShopMetrics checks the counters of one completed run of shopSpec,
// with the metrics of the engine that triggered it and of the one that
// executed it.
func checkShopMetrics(t *testing.T, triggered, ms metricSet) {
	t.Helper()
	counts := map[string]int64{
		"trellis.run.started":                    triggered.sum(t, "trellis.run.started", "trellis.workflow.name=shop"),
		"trellis.run.finished completed":         ms.sum(t, "trellis.run.finished", "trellis.workflow.name=shop", "trellis.run.outcome=completed"),
		"trellis.task.started validate":          ms.sum(t, "trellis.task.started", "trellis.step.name=validate"),
		"trellis.task.started charge":            ms.sum(t, "trellis.task.started", "trellis.step.name=charge"),
		"trellis.task.started ship":              ms.sum(t, "trellis.task.started", "trellis.step.name=ship"),
		"trellis.task.started, all":              ms.sum(t, "trellis.task.started"),
		"trellis.task.finished charge retried":   ms.sum(t, "trellis.task.finished", "trellis.step.name=charge", "trellis.task.outcome=retried"),
		"trellis.task.finished charge completed": ms.sum(t, "trellis.task.finished", "trellis.step.name=charge", "trellis.task.outcome=completed"),
		"trellis.task.finished reject skipped":   ms.sum(t, "trellis.task.finished", "trellis.step.name=reject", "trellis.task.outcome=skipped"),
		"trellis.task.finished nap completed":    ms.sum(t, "trellis.task.finished", "trellis.step.name=nap", "trellis.task.outcome=completed"),
		"trellis.task.finished, all completed":   ms.sum(t, "trellis.task.finished", "trellis.task.outcome=completed"),
		"trellis.task.finished, all failed":      ms.sum(t, "trellis.task.finished", "trellis.task.outcome=failed"),
	}
	want := map[string]int64{
		"trellis.run.started":                    1,
		"trellis.run.finished completed":         1,
		"trellis.task.started validate":          1,
		"trellis.task.started charge":            2,
		"trellis.task.started ship":              1,
		"trellis.task.started, all":              4,
		"trellis.task.finished charge retried":   1,
		"trellis.task.finished charge completed": 1,
		"trellis.task.finished reject skipped":   1,
		"trellis.task.finished nap completed":    1,
		"trellis.task.finished, all completed":   4, // validate, charge, nap, ship
		"trellis.task.finished, all failed":      0,
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	// Three code attempts ended (validate, charge twice, ship: 4), each
	// timed once, with its outcome.
	if n, _ := ms.histogram(t, "trellis.task.duration"); n != 4 {
		t.Errorf("step attempts timed: %d, want 4", n)
	}
	if n, _ := ms.histogram(t, "trellis.task.duration", "trellis.step.name=charge", "trellis.task.outcome=retried"); n != 1 {
		t.Errorf("charge attempts timed as retried: %d, want 1", n)
	}
	// Every claimed task waited in the queue once: validate, charge twice,
	// reject, nap (to sleep: its timer completes it, unclaimed), ship.
	if n, _ := ms.histogram(t, "trellis.task.wait_time"); n != 6 {
		t.Errorf("queue waits recorded: %d, want 6", n)
	}
	// One went to the worker straight from its parent's completion:
	// charge's first attempt, handed off as validate completed.
	if got := ms.sum(t, "trellis.task.handed_off"); got != 1 {
		t.Errorf("tasks handed off: %d, want 1", got)
	}
	if n, size := ms.histogram(t, "trellis.claim.size"); n == 0 || size != 5 {
		t.Errorf("claims took %v tasks in %d claims, want 5", size, n)
	}
	if n, _ := ms.histogram(t, "trellis.claim.duration"); n == 0 {
		t.Error("no claim was timed")
	}
}

// checkShopSpans checks the spans of one completed run of shopSpec,
// triggered inside request, and returns its trigger's span.
func checkShopSpans(t *testing.T, spans tracetest.SpanStubs, request trace.SpanContext, run runtime.RunID) tracetest.SpanStub {
	t.Helper()
	triggers := findSpans(spans, "trellis.trigger shop")
	if len(triggers) != 1 {
		t.Fatalf("%d trigger spans, want 1; spans: %v", len(triggers), spanNames(spans))
	}
	trigger := triggers[0]
	if trigger.Parent.SpanID() != request.SpanID() || trigger.SpanContext.TraceID() != request.TraceID() || trigger.SpanKind != trace.SpanKindProducer {
		t.Errorf("trigger span %s (kind %v), want a producer child of the request's span %s", trigger.Parent.SpanID(), trigger.SpanKind, request.SpanID())
	}
	checkSpanAttrs(t, trigger, map[string]string{"trellis.run.id": run.String(), "trellis.workflow.name": "shop", "trellis.tenant.id": "acme"})

	// One span per attempt of code: none for the skipped step or the nap.
	var steps []string
	for _, s := range spans {
		if name, ok := strings.CutPrefix(s.Name, "trellis.step "); ok {
			steps = append(steps, fmt.Sprintf("%s#%s:%s", name, attrOf(s, "trellis.task.attempt"), attrOf(s, "trellis.task.outcome")))
			if s.Parent.SpanID() != trigger.SpanContext.SpanID() || !s.Parent.IsRemote() || s.SpanContext.TraceID() != request.TraceID() {
				t.Errorf("span %s: parent %s (remote %v) in trace %s, want the trigger's span %s in the request's trace %s",
					s.Name, s.Parent.SpanID(), s.Parent.IsRemote(), s.SpanContext.TraceID(), trigger.SpanContext.SpanID(), request.TraceID())
			}
			if s.SpanKind != trace.SpanKindConsumer || attrOf(s, "trellis.run.id") != run.String() || attrOf(s, "trellis.tenant.id") != "acme" {
				t.Errorf("span %s: kind %v, attributes %v", s.Name, s.SpanKind, s.Attributes)
			}
		}
	}
	sort.Strings(steps)
	want := []string{"shop/charge#1:retried", "shop/charge#2:completed", "shop/ship#1:completed", "shop/validate#1:completed"}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("step spans (-want +got):\n%s", diff)
	}
	for _, s := range findSpans(spans, "trellis.step shop/charge") {
		failed := attrOf(s, "trellis.task.attempt") == "1"
		if failed != (s.Status.Code == codes.Error) || failed != (len(s.Events) == 1) {
			t.Errorf("charge attempt %s: status %v, events %v", attrOf(s, "trellis.task.attempt"), s.Status, s.Events)
		}
	}
	return trigger
}

func findSpans(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func attrOf(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

func checkSpanAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := attrOf(s, k); got != v {
			t.Errorf("span %s: %s = %q, want %q", s.Name, k, got, v)
		}
	}
}

func checkLine(t *testing.T, line, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if line[k] != v {
			t.Errorf("log line %q: %s = %q, want %q (line: %v)", line["msg"], k, line[k], v, line)
		}
	}
}

// A run triggered inside a span by one process and executed by another
// continues the trigger's trace: the stored trace context is all they
// share.
func TestTelemetryAcrossEnginesOnPostgres(t *testing.T) {
	pool := pgtest.Pool(t)
	caller, worker := newTelemetry(t), newTelemetry(t)
	trigger := newEngine(t, pgstore.New(pool), "api", caller.configure)
	var stepLog captured
	executor := newEngine(t, pgstore.New(pool), "worker", func(c *runtime.Config) {
		worker.configure(c)
		c.TenantMetrics = true
	})
	spec := shopSpec()
	spec.Steps[3].Sleep = 200 * time.Millisecond // the nap, on real time
	spec.Steps[1].Retry.InitialDelay = 100 * time.Millisecond
	steps := &shopSteps{advance: func(time.Duration) {}, stepLog: slog.New(runtime.NewLogHandler(&stepLog))}
	if _, err := executor.Register(spec, steps.handlers()); err != nil {
		t.Fatal(err)
	}
	// A workflow nobody executes keeps tasks queued for the queue gauge.
	idle, err := trigger.Workflow(&runtime.WorkflowSpec{Name: "idle", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idle.TriggerMany(t.Context(), make([]json.RawMessage, 3), runtime.WithTenant("globex")); err != nil {
		t.Fatal(err)
	}
	shop, err := trigger.Workflow(spec)
	if err != nil {
		t.Fatal(err)
	}
	start(t, executor)

	ctx, request := caller.tp.Tracer("test").Start(t.Context(), "POST /orders")
	ref, err := shop.Trigger(ctx, nil, runtime.WithTenant("acme"))
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	if res, err := shop.Wait(waitCtx(t), ref.ID); err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Wait = %+v, %v", res, err)
	}

	// The trigger's span is the caller's; the steps' are the worker's.
	callerSpans, workerSpans := caller.spans.GetSpans(), worker.spans.GetSpans()
	if n := len(findSpans(workerSpans, "trellis.trigger shop")); n != 0 {
		t.Errorf("the worker made %d trigger spans", n)
	}
	triggerSpan := findSpans(callerSpans, "trellis.trigger shop")
	if len(triggerSpan) != 1 {
		t.Fatalf("caller's spans: %v", spanNames(callerSpans))
	}
	all := append(slices.Clone(callerSpans), workerSpans...)
	checkShopSpans(t, all, request.SpanContext(), ref.ID)
	if line := stepLog.line(t, "shipping"); line["trace_id"] != request.SpanContext().TraceID().String() {
		t.Errorf("ship logged in trace %q, want the request's %s", line["trace_id"], request.SpanContext().TraceID())
	}

	deadline := time.Now().Add(10 * time.Second)
	for !executor.IsLeader() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	ms := worker.metrics(t)
	checkShopMetrics(t, caller.metrics(t), ms)
	if got := ms.sum(t, "trellis.task.started", "trellis.tenant.id=acme"); got != 4 {
		t.Errorf("with TenantMetrics, task starts of acme = %d, want 4", got)
	}
	if got := ms.sum(t, "trellis.engine.leader"); got != 1 {
		t.Errorf("the only started engine reports leadership %d, want 1", got)
	}
	if got := ms.sum(t, "trellis.queue.depth", "trellis.tenant.id=globex"); got != 3 {
		t.Errorf("queue depth of globex = %d, want 3", got)
	}
	if got := ms.sum(t, "trellis.queue.depth"); got != 3 {
		t.Errorf("queue depth = %d, want 3 (globex's)", got)
	}
	if n, _ := ms.histogram(t, "trellis.timer.lateness"); n != 2 {
		t.Errorf("timers fired: %d, want 2 (charge's retry, the nap)", n)
	}
}

// NewLogHandler adds a step's attributes to lines logged with its context,
// and nothing to other lines, with or without tracing.
func TestLogHandler(t *testing.T) {
	var lines captured
	log := slog.New(runtime.NewLogHandler(&lines)).With("component", "billing")
	h := trellistest.New(t)
	spec := &runtime.WorkflowSpec{Name: "logs", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "s"}}}
	w, err := h.Engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(ctx context.Context, _ *runtime.StepRequest) (json.RawMessage, error) {
			log.InfoContext(ctx, "in step")
			log.Info("without context")
			return nil, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Run(t.Context(), nil, runtime.WithTenant("acme"))
	if err != nil {
		t.Fatal(err)
	}
	log.InfoContext(t.Context(), "outside")
	checkLine(t, lines.line(t, "in step"), map[string]string{
		"run_id": res.ID.String(), "workflow": "logs", "step": "s", "attempt": "1", "tenant": "acme", "component": "billing",
		"trace_id": "", // no TracerProvider, no span
	})
	for _, msg := range []string{"without context", "outside"} {
		line := lines.line(t, msg)
		for _, k := range []string{"run_id", "workflow", "step", "attempt", "tenant", "trace_id"} {
			if v, ok := line[k]; ok {
				t.Errorf("line %q has %s=%q", msg, k, v)
			}
		}
	}
}

// TestTagsInTelemetry: a trigger's span carries every tag of its runs;
// the runs-started counter carries only those of the keys
// Config.MetricTagKeys names.
func TestTagsInTelemetry(t *testing.T) {
	tel := newTelemetry(t)
	h := trellistest.New(t, trellistest.WithConfig(func(c *runtime.Config) {
		tel.configure(c)
		c.MetricTagKeys = []string{"channel"}
	}))
	steps := &shopSteps{advance: h.Clock.Advance, stepLog: slog.New(runtime.NewLogHandler(&captured{})), tracer: tel.tp.Tracer("test")}
	shop, err := h.Engine.Register(shopSpec(), steps.handlers())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shop.Trigger(t.Context(), nil, runtime.WithTags(map[string]string{"channel": "web", "customer": "acme"})); err != nil {
		t.Fatal(err)
	}
	if _, err := shop.Trigger(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	triggers := findSpans(tel.spans.GetSpans(), "trellis.trigger shop")
	if len(triggers) != 2 {
		t.Fatalf("%d trigger spans, want 2", len(triggers))
	}
	checkSpanAttrs(t, triggers[0], map[string]string{"trellis.run.tag.channel": "web", "trellis.run.tag.customer": "acme"})
	if got := attrOf(triggers[1], "trellis.run.tag.channel"); got != "" {
		t.Errorf("the untagged trigger's span has tag channel=%q", got)
	}
	ms := tel.metrics(t)
	if got := ms.sum(t, "trellis.run.started", "trellis.run.tag.channel=web"); got != 1 {
		t.Errorf("runs started with channel=web = %d, want 1", got)
	}
	if got := ms.sum(t, "trellis.run.started"); got != 2 {
		t.Errorf("runs started = %d, want 2", got)
	}
	if d, ok := ms["trellis.run.started"].Data.(metricdata.Sum[int64]); ok {
		for _, p := range d.DataPoints {
			if _, has := p.Attributes.Value("trellis.run.tag.customer"); has {
				t.Errorf("the counter carries tag customer, which MetricTagKeys does not name: %v", p.Attributes)
			}
		}
	}
}

// The leader reports the tasks each pause of a workflow holds, one series
// per pause, for as long as the pause lasts.
func TestPausedGauge(t *testing.T) {
	tel := newTelemetry(t)
	h := trellistest.New(t, trellistest.WithConfig(tel.configure))
	shop, err := h.Engine.Register(shopSpec(), (&shopSteps{advance: h.Clock.Advance}).handlers())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Engine.PauseWorkflow(t.Context(), shop.Name(), "acme"); err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"acme", "acme", "beta"} {
		if _, err := shop.Trigger(t.Context(), nil, runtime.WithTenant(tenant)); err != nil {
			t.Fatal(err)
		}
	}
	h.RunUntilIdle() // beta's run goes on; acme's wait
	ms := tel.metrics(t)
	if got := ms.sum(t, "trellis.workflow.paused", "trellis.workflow.name="+shop.Name(), "trellis.tenant.id=acme"); got != 2 {
		t.Errorf("tasks held by the pause of acme = %d, want 2", got)
	}
	if _, err := h.Engine.ResumeWorkflow(t.Context(), shop.Name()); err != nil {
		t.Fatal(err)
	}
	if m, ok := tel.metrics(t)["trellis.workflow.paused"]; ok {
		t.Errorf("after the resume, the paused gauge still reports %+v, want no series", m.Data)
	}
}

// The leader reports the queued tasks no live worker can claim, per
// workflow, and 0 once a worker that can claim them is live.
func TestUnservedGaugeLabels(t *testing.T) {
	tel := newTelemetry(t)
	h := trellistest.New(t, trellistest.WithConfig(tel.configure))
	render, err := wf.RegisterRender(h.Engine, renderSteps{worker: "bare"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := render.RunNoWait(t.Context(), wf.RenderInput{Frames: []int64{1}}); err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle() // prepare needs region=eu, which this engine lacks
	// A Driver's engine announces nothing: a live worker serves the version,
	// without labels.
	version := render.Workflow().Definition().Version()
	if err := h.Store.AnnounceWorker(t.Context(), "bare-1", []string{version}, nil, h.Now()); err != nil {
		t.Fatal(err)
	}
	if got := tel.metrics(t).sum(t, "trellis.queue.unserved", "trellis.workflow.name=render"); got != 1 {
		t.Errorf("unserved tasks of render = %d, want 1 (prepare)", got)
	}
	if err := h.Store.AnnounceWorker(t.Context(), "eu-1", []string{version}, []string{"region=eu"}, h.Now()); err != nil {
		t.Fatal(err)
	}
	if got := tel.metrics(t).sum(t, "trellis.queue.unserved", "trellis.workflow.name=render"); got != 0 {
		t.Errorf("unserved tasks of render with a live eu worker = %d, want 0", got)
	}
}
