// Package bench measures Trellis: throughput of no-op workflows on
// Postgres (worker processes against one database) and on the memory
// store, the latency from a parent's completion to its child's start,
// fairness across tenants, what a hundred thousand durable sleeps cost a
// worker process and the database, and what a map step of ten thousand
// items costs.
//
// Each scenario is a function taking Options and returning typed
// results; Run runs the selected scenarios and Report prints them. The
// figures come from the run's own event log (the view trellis_event_log:
// the event rows and the tasks' slots), read with plain SQL after the
// work is done, so measuring adds nothing to the work measured. Nothing
// here asserts a timing: the harness reports.
//
// Every Postgres scenario runs in a fresh schema, trellis_bench_<random>,
// dropped afterwards unless Options.Keep. Worker processes are started
// with Options.WorkerCommand, which runs RunWorker in another process
// (trellis bench worker, or a re-executed test binary); they are stopped
// with SIGTERM, killed if they do not stop, and stop by themselves when
// their standard input closes, so that no worker outlives the harness.
package bench
