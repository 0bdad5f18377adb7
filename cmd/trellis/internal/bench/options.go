package bench

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"
)

// Scenario names, as -scenarios takes them.
const (
	ScenarioThroughput = "throughput"
	ScenarioLatency    = "latency"
	ScenarioFairness   = "fairness"
	ScenarioSleep      = "sleep"
	ScenarioPurge      = "purge"
	ScenarioMemory     = "memory"
	// ScenarioFlow: burn-downs under concurrency limits and priorities.
	ScenarioFlow = "flow"
	// ScenarioMap: one run's map step over MapItems items.
	ScenarioMap = "map"
	// ScenarioHistory: burn-downs with and without HistoryRuns finished
	// runs in the tables. Not run unless asked for: its history takes
	// minutes to insert, and gigabytes.
	ScenarioHistory = "history"
)

// Scenarios lists every scenario in the order Run runs them.
func Scenarios() []string {
	return []string{ScenarioThroughput, ScenarioLatency, ScenarioFairness, ScenarioSleep, ScenarioPurge, ScenarioMemory, ScenarioFlow, ScenarioMap,
		ScenarioHistory}
}

// defaultScenarios are the scenarios a run takes unless told: all but
// history.
func defaultScenarios() []string {
	return slices.DeleteFunc(Scenarios(), func(s string) bool { return s == ScenarioHistory })
}

// Options configure a bench run. Start from DefaultOptions (or
// QuickOptions) and change what you need.
type Options struct {
	// DatabaseURL is the Postgres connection string (no search_path: each
	// scenario makes a schema of its own).
	DatabaseURL string
	// Scenarios are the scenarios to run (see Scenarios).
	Scenarios []string
	// Workers are the worker process counts of the throughput cases.
	Workers []int
	// Runs is the number of runs each Postgres burn-down case inserts.
	Runs int
	// MemoryRuns is the number of runs of each memory store case.
	MemoryRuns int
	// SteadyDuration is how long a steady case inserts runs; the first
	// SteadyWarmup of it is not measured.
	SteadyDuration time.Duration
	SteadyWarmup   time.Duration
	// MaxBacklog bounds the unfinished runs of a steady case.
	MaxBacklog int
	// LatencyRuns is the number of chain-5 runs of the idle latency case,
	// triggered one at a time.
	LatencyRuns int
	// FairnessBacklog is tenant B's backlog in the lone-tenant case.
	FairnessBacklog int
	// FairnessTenants tenants each insert FairnessRuns runs in the
	// shared-backlog case.
	FairnessTenants int
	FairnessRuns    int
	// FairnessWorkers is the number of worker processes of both fairness
	// cases.
	FairnessWorkers int
	// Sleepers is the number of sleeping runs of the sleep scenario; each
	// sleeps Sleep.
	Sleepers int
	Sleep    time.Duration
	// PurgeRuns is the number of finished runs, aged past their
	// retention, that the purge scenario inserts for the leader to delete
	// while a burn-down of Runs runs is worked.
	PurgeRuns int
	// MapItems is the number of items of the map scenario's one run.
	MapItems int
	// HistoryRuns is the number of finished runs the history scenario
	// inserts.
	HistoryRuns int
	// Engine holds the settings of every engine that executes steps.
	Engine EngineSettings
	// Keep keeps each scenario's schema instead of dropping it.
	Keep bool
	// StallAfter is how long a case waits for the next task to change
	// state before it fails (0: two minutes; see stallAfter).
	StallAfter time.Duration
	// WorkerCommand starts worker processes (required for the Postgres
	// scenarios).
	WorkerCommand WorkerCommand
	// Log receives progress; nil discards it.
	Log *slog.Logger
}

// DefaultOptions are the sizes of a full run: each throughput case takes
// several seconds on a small machine.
func DefaultOptions() Options {
	return Options{
		Scenarios:       defaultScenarios(),
		Workers:         []int{1, 2, 4},
		Runs:            15000,
		MemoryRuns:      20000,
		SteadyDuration:  12 * time.Second,
		SteadyWarmup:    3 * time.Second,
		MaxBacklog:      2000,
		LatencyRuns:     200,
		FairnessBacklog: 10000,
		FairnessTenants: 4,
		FairnessRuns:    2500,
		FairnessWorkers: 2,
		Sleepers:        100000,
		Sleep:           30 * time.Second,
		PurgeRuns:       300000,
		MapItems:        10000,
		HistoryRuns:     2_000_000,
	}
}

// QuickOptions are tiny sizes for a smoke run: every figure, none of them
// meaningful.
func QuickOptions() Options {
	o := DefaultOptions()
	o.Workers = []int{1, 2}
	o.Runs = 200
	o.MemoryRuns = 500
	o.SteadyDuration = 2 * time.Second
	o.SteadyWarmup = 500 * time.Millisecond
	o.MaxBacklog = 200
	o.LatencyRuns = 20
	o.FairnessBacklog = 1000
	o.FairnessRuns = 100
	o.Sleepers = 500
	o.Sleep = 3 * time.Second
	o.PurgeRuns = 3000
	o.MapItems = 1000
	o.HistoryRuns = 20000
	return o
}

// Validate reports options Run cannot work with.
func (o Options) Validate() error {
	var errs []error
	if len(o.Scenarios) == 0 {
		errs = append(errs, errors.New("no scenario to run"))
	}
	for _, s := range o.Scenarios {
		if !slices.Contains(Scenarios(), s) {
			errs = append(errs, fmt.Errorf("unknown scenario %q (known: %v)", s, Scenarios()))
		}
	}
	if o.needsPostgres() && o.DatabaseURL == "" {
		errs = append(errs, errors.New("no database: pass -database-url or set TRELLIS_DATABASE_URL"))
	}
	if o.has(ScenarioThroughput) && len(o.Workers) == 0 {
		errs = append(errs, errors.New("no worker counts for the throughput cases"))
	}
	for _, w := range o.Workers {
		if w < 1 {
			errs = append(errs, fmt.Errorf("worker count %d: need at least 1", w))
		}
	}
	positive := []struct {
		name string
		v    int64
	}{
		{"runs", int64(o.Runs)}, {"memory runs", int64(o.MemoryRuns)}, {"steady duration", int64(o.SteadyDuration)},
		{"max backlog", int64(o.MaxBacklog)}, {"latency runs", int64(o.LatencyRuns)},
		{"fairness backlog", int64(o.FairnessBacklog)}, {"fairness tenants", int64(o.FairnessTenants)},
		{"fairness runs", int64(o.FairnessRuns)}, {"fairness workers", int64(o.FairnessWorkers)},
		{"sleepers", int64(o.Sleepers)}, {"sleep", int64(o.Sleep)}, {"purge runs", int64(o.PurgeRuns)},
		{"map items", int64(o.MapItems)}, {"history runs", int64(o.HistoryRuns)},
	}
	for _, p := range positive {
		if p.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", p.name))
		}
	}
	if o.SteadyWarmup < 0 || o.SteadyWarmup >= o.SteadyDuration {
		errs = append(errs, fmt.Errorf("steady warm-up %v must be shorter than the steady duration %v", o.SteadyWarmup, o.SteadyDuration))
	}
	if err := o.Engine.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (o Options) has(scenario string) bool { return slices.Contains(o.Scenarios, scenario) }

func (o Options) needsPostgres() bool {
	return slices.ContainsFunc(o.Scenarios, func(s string) bool { return s != ScenarioMemory })
}

func (o Options) logger() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o.Log
}

// DefaultDatabaseURL is the local server's test database, which the
// trellis command uses when neither a flag nor TRELLIS_DATABASE_URL says
// otherwise.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
