package bench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	goruntime "runtime"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// Results is everything a bench run measured.
type Results struct {
	Started     time.Time   `json:"started"`
	Environment Environment `json:"environment"`
	// Engine holds the settings of the engines that executed steps.
	Engine EngineSettings `json:"engine"`
	// Sizes are the options that shaped the cases.
	Sizes      Sizes        `json:"sizes"`
	Throughput []Throughput `json:"throughput,omitempty"`
	// Flow are the flow-control cases (ScenarioFlow).
	Flow     []Throughput `json:"flow,omitempty"`
	Latency  []Latency    `json:"latency,omitempty"`
	Fairness *Fairness    `json:"fairness,omitempty"`
	Sleep    *Sleep       `json:"sleep,omitempty"`
	Purge    *Purge       `json:"purge,omitempty"`
	Map      *Map         `json:"map,omitempty"`
	History  *History     `json:"history,omitempty"`
	// Errors are the scenarios (or cases) that failed.
	Errors []string `json:"errors,omitempty"`
}

// Sizes are the sizes a run used (see Options).
type Sizes struct {
	Runs            int           `json:"runs"`
	MemoryRuns      int           `json:"memory_runs"`
	SteadyDuration  time.Duration `json:"steady_duration_ns"`
	SteadyWarmup    time.Duration `json:"steady_warmup_ns"`
	MaxBacklog      int           `json:"max_backlog"`
	LatencyRuns     int           `json:"latency_runs"`
	FairnessBacklog int           `json:"fairness_backlog"`
	FairnessTenants int           `json:"fairness_tenants"`
	FairnessRuns    int           `json:"fairness_runs"`
	FairnessWorkers int           `json:"fairness_workers"`
	Sleepers        int           `json:"sleepers"`
	Sleep           time.Duration `json:"sleep_ns"`
	PurgeRuns       int           `json:"purge_runs"`
	MapItems        int           `json:"map_items"`
	HistoryRuns     int           `json:"history_runs"`
}

// Environment is where the figures were measured.
type Environment struct {
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	// Postgres is the server version and Database where it is (without
	// credentials); empty when no Postgres scenario ran.
	Postgres string `json:"postgres,omitempty"`
	Database string `json:"database,omitempty"`
}

// Run runs the scenarios o selects, in the order Scenarios lists them.
// A scenario that fails is recorded in Results.Errors and the others
// still run; the error joins every failure. It stops early only when ctx
// ends.
func Run(ctx context.Context, o Options) (*Results, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	res := &Results{
		Started: time.Now(), Engine: o.Engine,
		Environment: Environment{GoVersion: goruntime.Version(), OS: goruntime.GOOS, Arch: goruntime.GOARCH, CPUs: goruntime.NumCPU()},
		Sizes: Sizes{
			Runs: o.Runs, MemoryRuns: o.MemoryRuns, SteadyDuration: o.SteadyDuration, SteadyWarmup: o.SteadyWarmup,
			MaxBacklog: o.MaxBacklog, LatencyRuns: o.LatencyRuns, FairnessBacklog: o.FairnessBacklog,
			FairnessTenants: o.FairnessTenants, FairnessRuns: o.FairnessRuns, FairnessWorkers: o.FairnessWorkers,
			Sleepers: o.Sleepers, Sleep: o.Sleep, PurgeRuns: o.PurgeRuns, MapItems: o.MapItems, HistoryRuns: o.HistoryRuns,
		},
	}
	if o.needsPostgres() {
		v, err := serverVersion(ctx, o.DatabaseURL)
		if err != nil {
			return nil, err
		}
		res.Environment.Postgres, res.Environment.Database = v, redact(o.DatabaseURL)
	}
	var errs []error
	fail := func(scenario string, err error) {
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", scenario, err))
			errs = append(errs, fmt.Errorf("%s: %w", scenario, err))
		}
	}
	var latency []Latency
	for _, s := range Scenarios() {
		if !o.has(s) || ctx.Err() != nil {
			continue
		}
		switch s {
		case ScenarioThroughput:
			t, l, err := RunThroughput(ctx, o)
			res.Throughput = append(res.Throughput, t...)
			latency = append(latency, l...)
			fail(s, err)
		case ScenarioLatency:
			l, err := RunLatency(ctx, o)
			if err == nil {
				res.Latency = append(res.Latency, l)
			}
			fail(s, err)
		case ScenarioFairness:
			f, err := RunFairness(ctx, o)
			res.Fairness = &f
			fail(s, err)
		case ScenarioSleep:
			sl, err := RunSleep(ctx, o)
			if err == nil {
				res.Sleep = &sl
			}
			fail(s, err)
		case ScenarioPurge:
			p, err := RunPurge(ctx, o)
			if err == nil {
				res.Purge = &p
			}
			fail(s, err)
		case ScenarioMemory:
			t, err := RunMemory(ctx, o)
			res.Throughput = append(res.Throughput, t...)
			fail(s, err)
		case ScenarioFlow:
			t, err := RunFlow(ctx, o)
			res.Flow = append(res.Flow, t...)
			fail(s, err)
		case ScenarioMap:
			m, err := RunMap(ctx, o)
			if err == nil {
				res.Map = &m
			}
			fail(s, err)
		case ScenarioHistory:
			h, err := RunHistory(ctx, o)
			if err == nil {
				res.History = &h
			}
			fail(s, err)
		}
	}
	// Idle latency first, then the steady cases' latency.
	res.Latency = append(res.Latency, latency...)
	err := errors.Join(errs...)
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = errors.Join(err, ctx.Err())
	}
	return res, err
}

// serverVersion asks Postgres its version, which also checks that it
// answers before any scenario starts.
func serverVersion(ctx context.Context, url string) (string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", fmt.Errorf("connecting to Postgres: %w", pgstore.RedactErr(err, url))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, `SHOW server_version`).Scan(&v); err != nil {
		return "", fmt.Errorf("asking Postgres its version: %w", err)
	}
	return v, nil
}

// redact returns where a connection string points, without credentials
// or parameters.
func redact(conn string) string {
	u, err := url.Parse(conn)
	if err != nil || u.Host == "" {
		return "(connection string)"
	}
	return u.Host + u.Path
}
