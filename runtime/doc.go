// Package runtime executes workflows: durable DAGs of steps, declared in
// YAML and turned into typed Go by `trellis generate`.
//
// # The pieces
//
//   - An Engine runs workflows against a store.Store: the memory store
//     (memstore, for tests and single processes) or Postgres (pgstore, any
//     number of processes). Create one with New.
//   - A WorkflowSpec is a workflow's declarative form. Generated code
//     embeds one per YAML file and registers it, with the step code, on an
//     engine: Register<Workflow>(engine, steps) returns its typed client,
//     a Client[Input, Result], whose Run, RunNoWait and Wait start and
//     await runs, and whose Result reads one as it is now, outputs typed.
//     <Workflow>Refs gives each step a typed identity, a StepRef, through
//     which those results are decoded and which Output takes. Without
//     generated code, Engine.Register takes a spec and Handlers and
//     returns a Workflow with the same methods on JSON (NewClient makes a
//     typed client of it). Engine.WaitMany waits for many runs at once (a
//     batch from TriggerMany, say), at the cost of a few reads per
//     wake-up rather than a poll per run.
//   - Actions on runs are the engine's, whoever calls them (a program, the
//     trellis command, the dashboard): CancelRuns, RetryRuns, RerunRuns
//     (from a step), PurgeRuns, Events, StuckRuns, SendEvent, PublishEvent
//     (which starts the workflows that start on an event, by its name),
//     and the schedules' Pause, Resume and Delete by workflow name.
//     Package ops reads and presents runs for
//     operators (listings, filters, run detail).
//   - Start makes an engine claim ready tasks, run their steps, record the
//     results, heartbeat, and take part in leader election (the leader
//     fires durable timers, recovers the tasks of dead workers and
//     deletes finished runs past their Config.Retention). Stop
//     shuts it down gracefully. An engine that only triggers runs need not
//     be started.
//   - A Driver runs an engine by hand instead, on the engine's clock, so
//     that tests are deterministic; the trellistest package wraps one with
//     a virtual clock.
//
// # What a run does
//
// Creating a run validates its input against the input schema and stores
// the run and its tasks in one transaction. A step is ready when each of
// its parents completed or was skipped; it is skipped when a skipIf
// condition is true, or when all its parents were skipped. A failing step
// is retried per its retry policy on a durable timer; a step that fails
// for good fails the run, cancels what has not finished and runs the
// workflow's failure handler. Sleep steps are durable timers that hold
// nothing while they wait. Every state change is appended to the run's
// event log (Engine.Events); a SLEEPING or RETRYING event's WakeAt says
// when the task's timer is due. Delivery is at least once: a step may run
// again if its worker dies before its result is recorded, so steps
// should be idempotent (StepInfo, from InfoFromContext, names the run,
// step and attempt).
//
// # Options
//
// Triggers take RunOptions: WithTenant (the scheduler is fair across
// tenants), WithIdempotencyKey (WithIdempotencyKeys for TriggerMany, one
// key per input), and WithTx to create a run inside the caller's
// database transaction (runtime.WithTx(pgstore.Tx(tx))). A publish
// (PublishEvent) takes WithTenant and WithTx, and WithEventKey, which
// only it takes: the key it wakes the steps waiting for its event with.
//
// # Observability
//
// Metrics and traces are OpenTelemetry's, off unless Config gives a
// MeterProvider or a TracerProvider (the global providers are never
// used). With a MeterProvider, the engine counts runs and tasks by
// workflow, step and outcome (trellis.run.*, trellis.task.*), times step
// attempts, queue waits, claims and timer lateness, and reports
// leadership, queue depth per tenant and stuck runs as gauges. With a
// TracerProvider, each trigger makes a span whose context is stored with
// its runs, and each step attempt a span that is its child, in whichever
// process runs it: a run triggered inside an HTTP handler continues the
// request's trace. Logs are slog's (Config.Logger): every engine line
// about a task carries run_id, workflow, step, attempt and tenant, and
// NewLogHandler gives a step's own lines the same. docs/reference/telemetry.md
// lists the metrics and their attributes.
//
// docs/architecture.md names the packages behind the engine (under
// internal/) and follows a task from trigger to result through them.
package runtime
