package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/executor"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

var errRunInTx = errors.New("Run cannot wait inside a transaction: the run only exists once the transaction commits; use RunNoWait with the transaction, commit, then Wait")

// Config configures an Engine. Only Store is required.
type Config struct {
	// Store keeps all state: memstore.New() or a pgstore.
	Store store.Store
	// Clock is the source of time; clock.Real() by default. Tests pass a
	// *clock.Virtual. A virtual clock moves every run of the Store, not
	// only this engine's (timers due by its time fire, whoever set them,
	// and the times recorded are its own): give it a store of its own, the
	// memory store or a Postgres schema nothing else uses, never one that
	// workers share.
	Clock clock.Clock
	// Logger receives structured logs; by default they are discarded.
	Logger *slog.Logger
	// WorkerID names this engine in task claims and heartbeats; by default
	// host-pid-random.
	WorkerID string
	// Concurrency is the number of steps whose code this engine runs at
	// once (default 100). A step's slot frees when its code returns; its
	// result is then recorded in the background, in batches. Results
	// waiting to be recorded are bounded apart, at twice Concurrency:
	// when that many wait, a step that returns keeps its slot until one
	// is recorded, so that an engine whose store falls behind stops
	// claiming. Tasks handed off to it that find no free slot wait for
	// one (at most six times Concurrency of them at once, for at most
	// a second; see docs/concepts/execution-model.md, Hand-offs).
	Concurrency int
	// ClaimBatch is the most tasks claimed in one store round trip
	// (default Concurrency).
	ClaimBatch int
	// BatchWindow is how long a busy engine waits to gather a batch: free
	// slots before claiming, results before recording them (default 1ms;
	// negative: never wait). An engine with no step running never waits.
	BatchWindow time.Duration
	// PollInterval is how often an idle engine looks for work when no
	// wake-up arrived (default 1s); wake-ups make most polls unnecessary.
	PollInterval time.Duration
	// TimerInterval bounds how late a durable timer (sleep or retry
	// backoff) fires when it was set by another process (default 1s).
	TimerInterval time.Duration
	// HeartbeatInterval is how often running tasks are heartbeated
	// (default 5s).
	HeartbeatInterval time.Duration
	// StaleAfter is how long a running task may go without a heartbeat
	// before its worker is presumed dead and the task is recovered
	// (default 30s; keep it several HeartbeatIntervals).
	StaleAfter time.Duration
	// TenantConcurrency, when positive, caps the running tasks of any one
	// tenant across all engines sharing the store. Under a cap, every task
	// is claimed from the queue (no hand-offs: see DisableHandOff).
	TenantConcurrency int
	// DisableHandOff makes every task go through the ready queue. By
	// default, when this engine records a step's completion, the store may
	// hand a child it makes ready straight back to this engine, where the
	// fair queue would have put the child first anyway (store.HandOff):
	// the run goes on without a claim, in the next free slot.
	DisableHandOff bool
	// StuckAfter is how long a run may make no progress (a task running
	// past it and its step's timeout, queued and unclaimed, or waiting on
	// a timer overdue by it) before the leader logs it as stuck, with the
	// tasks holding it up and the workers holding them (default 10m;
	// negative: never). See Engine.StuckRuns.
	StuckAfter time.Duration
	// MeterProvider, when set, receives the engine's metrics: counters of
	// runs and tasks by workflow, step and outcome, histograms of step
	// duration, queue wait, claims and timer lateness, and gauges of
	// leadership, queue depth and stuck runs (docs/reference/telemetry.md lists them).
	// nil, the default, means no metrics at the cost of a nil check; the
	// engine never falls back to the global provider, so that a library
	// user's process decides what is measured.
	MeterProvider metric.MeterProvider
	// TracerProvider, when set, traces runs: a span per trigger, stored
	// with the runs it creates, and a span per step attempt, its child,
	// in whichever process runs it; step code finds its span in its
	// context. Set it on the engines that trigger runs too: a run
	// triggered without it has no trace to continue. nil, the default,
	// means no tracing (the global provider is not used either).
	TracerProvider trace.TracerProvider
	// Retention says how long finished runs are kept before the leader
	// deletes them: by default 7 days for completed and cancelled runs,
	// 30 for failed ones. See Retention; KeepForever keeps a status's
	// runs forever.
	Retention Retention
	// TenantMetrics adds the tenant (trellis.tenant.id) to the run and
	// task metrics. Off by default: each tenant multiplies their series,
	// and a system with many tenants would flood the metrics backend.
	// The queue gauges always name tenants, the 100 deepest at most.
	TenantMetrics bool
	// MetricTagKeys names the run tags (see Tags) the runs-started
	// counter (trellis.run.started) carries as attributes,
	// trellis.run.tag.<key>, for the runs that have them. None by
	// default: each value of a key multiplies the counter's series, so
	// name only keys of few values (a channel, a plan), never one of a
	// value per customer or order. Traces carry every tag.
	MetricTagKeys []string
	// ScheduleLate bounds how late a cron schedule's tick still starts its
	// run (default 1 hour): when no engine with the workflow ran at a tick
	// and one starts later, it starts the latest tick missed by less, and
	// skips the others (see WorkflowSpec.Schedules).
	ScheduleLate time.Duration
	// ScheduleRefresh is how often an engine reads the schedules created
	// at run time (Workflow.CreateSchedule) of the workflows it registered
	// (default 10s): a schedule another process creates, changes, pauses
	// or deletes takes effect on this engine within it. Changes made
	// through this engine take effect at once.
	ScheduleRefresh time.Duration
	// VersionRefresh is how often a started engine reads the stored
	// versions of the workflows it registered (default 30s), to serve
	// those its code can run besides the registered ones (see
	// Engine.ServedVersions); a version stored later is served within it.
	VersionRefresh time.Duration
	// Labels are this engine's worker labels, such as {"gpu": "a100",
	// "region": "eu-west-1"}: a step whose runsOn names labels is run
	// only by engines whose Labels include every one with the same value;
	// steps without runsOn run on any engine. At most 64; keys and values
	// as spec.CheckLabel says (letters, digits, '.', '_', '-', keys also
	// '/'; at most 63 bytes). The engine announces them with its versions
	// (trellis workers). See docs/how-to/workers.md, Labels.
	Labels map[string]string
	// SizeLimits bound run inputs, step outputs, event payloads, map
	// steps' items, tenants and idempotency keys; zero fields take their
	// defaults (1 MiB inputs, outputs and payloads, 64 levels of nesting,
	// 10,000 items, 255-byte tenants, 512-byte keys, step errors cut at
	// 8 KiB). See SizeLimits.
	SizeLimits SizeLimits
}

func (c *Config) setDefaults() error {
	if c.Store == nil {
		return errors.New("runtime.Config: Store is required")
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 100
	}
	if c.BatchWindow == 0 {
		c.BatchWindow = time.Millisecond
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = c.Concurrency
	}
	durations := []*time.Duration{&c.PollInterval, &c.TimerInterval, &c.HeartbeatInterval, &c.StaleAfter}
	defaults := []time.Duration{time.Second, time.Second, 5 * time.Second, 30 * time.Second}
	for i, d := range durations {
		if *d <= 0 {
			*d = defaults[i]
		}
	}
	if c.StuckAfter == 0 {
		c.StuckAfter = 10 * time.Minute
	}
	if c.ScheduleLate <= 0 {
		c.ScheduleLate = time.Hour
	}
	if c.ScheduleRefresh <= 0 {
		c.ScheduleRefresh = 10 * time.Second
	}
	if c.VersionRefresh <= 0 {
		c.VersionRefresh = 30 * time.Second
	}
	if c.StaleAfter <= c.HeartbeatInterval {
		return fmt.Errorf("runtime.Config: StaleAfter (%v) must exceed HeartbeatInterval (%v)", c.StaleAfter, c.HeartbeatInterval)
	}
	if problems := spec.CheckLabels(c.Labels, spec.MaxWorkerLabels); len(problems) > 0 {
		return fmt.Errorf("runtime.Config: Labels: %s", strings.Join(problems, "; "))
	}
	if err := c.SizeLimits.setDefaults(); err != nil {
		return err
	}
	return c.Retention.setDefaults()
}

// Engine executes workflows against a store. One engine per process is
// typical; any number of engines (in any number of processes) may share a
// store. Register workflows, then Start; or, in tests, run it by hand
// with a Driver (see the trellistest package).
type Engine struct {
	cfg   Config
	store store.Store
	clock clock.Clock
	log   *slog.Logger

	// The components, which New builds from cfg (docs/architecture.md).
	exec    *executor.Executor // claims, runs and records tasks
	leading leaderServices     // leadership and the leader's services
	metrics *telemetry.Metrics // nil without Config.MeterProvider
	tracer  *telemetry.Tracer  // nil without Config.TracerProvider
	faults  *telemetry.Faults  // logs the failures of the loops once per outage
	cron    *cronScheduler     // fires cron schedules; keeps what this engine knows of them

	// The engine's own state, each part under its own lock.
	registry *registry // compiled definitions and registered workflows
	waiters  *waiters  // callers of Wait and WaitMany
	mode     runMode   // started, or driven by hand
}

// New returns an engine; it does nothing until Start (or a Driver runs it).
func New(cfg Config) (*Engine, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("worker", cfg.WorkerID)
	e := &Engine{
		cfg: cfg, store: cfg.Store, clock: cfg.Clock, log: log,
		registry: newRegistry(),
		waiters:  newWaiters(),
		faults:   telemetry.NewFaults(log),
		tracer:   telemetry.NewTracer(cfg.TracerProvider, cfg.Clock),
	}
	m, err := telemetry.NewMetrics(cfg.MeterProvider, cfg.TenantMetrics, cfg.MetricTagKeys)
	if err != nil {
		return nil, err
	}
	e.metrics = m
	e.cron = &cronScheduler{
		state: newSchedules(cfg.ScheduleRefresh), registry: e.registry, store: cfg.Store, clock: cfg.Clock, log: log,
		limits: cfg.SizeLimits, late: cfg.ScheduleLate, retryEvery: cfg.TimerInterval, trigger: e.trigger,
	}
	e.leading = e.newLeaderServices()
	plan := &planner{
		store: cfg.Store, clock: cfg.Clock, log: log, registry: e.registry, defs: e,
		limits: cfg.SizeLimits, metrics: e.metrics, tracer: e.tracer,
	}
	e.exec = executor.New(executor.Config{
		Worker: cfg.WorkerID, Concurrency: cfg.Concurrency, ClaimBatch: cfg.ClaimBatch,
		BatchWindow: cfg.BatchWindow, PollInterval: cfg.PollInterval, HeartbeatInterval: cfg.HeartbeatInterval,
		TenantConcurrency: cfg.TenantConcurrency, DisableHandOff: cfg.DisableHandOff, Stopped: ErrStopped,
		Labels:  spec.LabelList(cfg.Labels),
		Planner: plan, RunEnded: e.waiters.runFinished, TimerSet: e.leading.timers.Nudge, EndCause: e.endCause,
		Store: cfg.Store, Clock: cfg.Clock, Log: log, Metrics: e.metrics, Faults: e.faults,
	})
	plan.attemptLog = e.exec.AttemptLog
	return e, nil
}

// Store is the engine's store, for inspection.
func (e *Engine) Store() store.Store { return e.store }

// Clock is the engine's clock.
func (e *Engine) Clock() clock.Clock { return e.clock }

// Config returns the engine's effective configuration, defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

// IsLeader reports whether this engine currently holds leadership: it
// fires durable timers and recovers the tasks of dead workers.
func (e *Engine) IsLeader() bool { return e.leading.elector.Leading() }

// WorkerID is the name this engine claims tasks under.
func (e *Engine) WorkerID() string { return e.cfg.WorkerID }

// Register compiles a workflow and registers its code, so that this engine
// executes the workflow's steps. Every code step needs a StepFunc, and the
// failure handler a FailureFunc. Registering the same workflow twice is an
// error; do it before Start.
func (e *Engine) Register(spec *WorkflowSpec, h Handlers) (*Workflow, error) {
	def, err := e.compile(spec)
	if err != nil {
		return nil, err
	}
	if err := checkHandlers(def, h); err != nil {
		return nil, err
	}
	if err := e.cron.check(def); err != nil {
		return nil, err
	}
	if err := e.registry.register(def, h); err != nil {
		return nil, err
	}
	return &Workflow{engine: e, def: def}, nil
}

// RegisterFormer registers h as the code of a former version of a
// workflow registered with Register, so that this engine keeps running
// the runs of that version still in flight during a rolling deploy (see
// docs/how-to/deploys.md): keep the former workflow file, generate it
// into a package of its own, and register it with the generated
// Register<Workflow>Former beside the current version. The engine
// serves the former version's tasks with this code, and never starts a
// run of it: triggers, schedules, events and child workflow steps start
// the version registered with Register. A version registered already is
// refused; do it before Start.
func (e *Engine) RegisterFormer(spec *WorkflowSpec, h Handlers) error {
	def, err := e.compile(spec)
	if err != nil {
		return err
	}
	if err := checkHandlers(def, h); err != nil {
		return err
	}
	return e.registry.registerFormer(def, h)
}

func checkHandlers(def *Definition, h Handlers) error {
	errs := missingCode(def, h)
	for name := range h.Steps {
		if s, ok := def.graph.Step(name); !ok || s.Kind == store.KindOnFailure || !def.spec.Steps[s.Index].RunsCode() {
			errs = append(errs, fmt.Errorf("code given for %s, which is not a code step", name))
		}
	}
	if h.OnFailure != nil {
		if _, ok := def.graph.OnFailure(); !ok {
			errs = append(errs, errors.New("failure handler code given, but the workflow declares no onFailure"))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("registering workflow %s: %w", def.Name(), errors.Join(errs...))
	}
	return nil
}

// missingCode names each step of def that runs code, and its failure
// handler, for which h has no code.
func missingCode(def *Definition, h Handlers) []error {
	var errs []error
	for _, s := range def.graph.Steps {
		switch {
		case s.Kind == store.KindOnFailure:
			if h.OnFailure == nil {
				errs = append(errs, fmt.Errorf("no code for failure handler %s", s.Name))
			}
		case def.spec.Steps[s.Index].RunsCode():
			if h.Steps[s.Name] == nil {
				errs = append(errs, fmt.Errorf("no code for step %s", s.Name))
			}
		}
	}
	return errs
}

// Workflow compiles a workflow for triggering only: runs are executed by
// whichever engines registered its code.
func (e *Engine) Workflow(spec *WorkflowSpec) (*Workflow, error) {
	def, err := e.compile(spec)
	if err != nil {
		return nil, err
	}
	e.registry.use(def)
	return &Workflow{engine: e, def: def}, nil
}

// compile compiles a spec, reusing an earlier compilation of the same
// version.
func (e *Engine) compile(spec *WorkflowSpec) (*Definition, error) {
	def, err := Compile(spec)
	if err != nil {
		return nil, err
	}
	return e.registry.compiled(def), nil
}

// Definition returns the definition of a stored workflow version (a run's
// Version), loading it from the store the first time this engine needs
// it: the way to interpret runs of versions this process was not built
// with, such as their step names.
func (e *Engine) Definition(ctx context.Context, version string) (*Definition, error) {
	return e.definition(ctx, version)
}

// definition returns the definition of a version, loading it from the
// store when this process has not seen it.
func (e *Engine) definition(ctx context.Context, version string) (*Definition, error) {
	if def, ok := e.registry.definition(version); ok {
		return def, nil
	}
	stored, err := e.store.LoadWorkflow(ctx, version)
	if err != nil {
		return nil, fmt.Errorf("loading workflow version %s: %w", version, err)
	}
	var spec WorkflowSpec
	if err := json.Unmarshal(stored.Spec, &spec); err != nil {
		return nil, fmt.Errorf("decoding workflow version %s: %w", version, err)
	}
	def, err := Compile(&spec)
	if err != nil {
		return nil, err
	}
	if def.Version() != version {
		return nil, fmt.Errorf("workflow version %s compiles to version %s", version, def.Version())
	}
	e.registry.loaded(def)
	return def, nil
}

// wake nudges the claim loop (if running) to look for work now.
func (e *Engine) wake() { e.exec.Wake() }
