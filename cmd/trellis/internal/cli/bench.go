package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/bench"
)

// BenchOptions are the options of trellis bench.
type BenchOptions struct {
	bench.Options
	// JSON prints the results as JSON instead of the text report.
	JSON bool
}

// Validate reports options bench cannot run with.
func (o BenchOptions) Validate() error { return o.Options.Validate() }

// BenchCommand is trellis bench: the benchmark harness. It prints
// figures and never judges them. trellis bench worker (not listed) is the
// worker process it starts; see BenchWorkerCommand.
type BenchCommand struct{}

// Name implements Command.
func (BenchCommand) Name() string { return "bench" }

// Summary implements Command.
func (BenchCommand) Summary() string {
	return "measure throughput, latency, fairness and the cost of sleeps and of purges"
}

// Run implements Command.
func (c BenchCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == benchWorkerArg {
		return BenchWorkerCommand{}.Run(ctx, args[1:], stdout, stderr)
	}
	fs := newFlagSet(c.Name(), "[flags]",
		"Bench measures Trellis on Postgres and on the memory store: throughput of no-op\n"+
			"workflows with 1, 2 and 4 worker processes (burn-down and steady), hand-off\n"+
			"latency, fairness across tenants, what durable sleeps cost and what purging old\n"+
			"runs costs the workers. Each scenario runs in a fresh schema\n"+
			"trellis_bench_<random>, dropped afterwards unless -keep.\n"+
			"A full run takes several minutes; -quick is a smoke run with tiny sizes.")
	def := bench.DefaultOptions()
	var (
		scenarios = fs.String("scenarios", strings.Join(def.Scenarios, ","), "comma-separated `list` of scenarios: "+strings.Join(bench.Scenarios(), ", "))
		workers   = fs.String("workers", joinInts(def.Workers), "comma-separated worker process `counts` of the throughput cases")
		runs      = fs.Int("runs", def.Runs, "runs per Postgres burn-down case")
		memRuns   = fs.Int("memory-runs", def.MemoryRuns, "runs per memory store case")
		steady    = fs.Duration("steady-duration", def.SteadyDuration, "how long a steady case runs (the first quarter is warm-up)")
		backlog   = fs.Int("max-backlog", def.MaxBacklog, "most unfinished runs in a steady case")
		sleepers  = fs.Int("sleepers", def.Sleepers, "sleeping runs of the sleep scenario")
		sleep     = fs.Duration("sleep", def.Sleep, "how long each of them sleeps")
		purgeRuns = fs.Int("purge-runs", def.PurgeRuns, "finished runs past their retention the purge scenario inserts for the leader to delete")
		mapItems  = fs.Int("map-items", def.MapItems, "items of the map scenario's map step")
		history   = fs.Int("history-runs", def.HistoryRuns, "finished runs the history scenario inserts (history is run only when -scenarios names it)")
		dbURL     string
		engine    bench.EngineSettings
		opts      BenchOptions
		keep      bool
		quick     bool
	)
	addDatabaseURLFlag(fs, &dbURL, defaultDatabaseURL(), "Postgres connection `string` (default $TRELLIS_DATABASE_URL, else the local server)")
	bench.EngineFlags(fs, &engine)
	fs.BoolVar(&opts.JSON, "json", false, "print the results as JSON")
	fs.BoolVar(&keep, "keep", false, "keep each scenario's schema instead of dropping it")
	fs.BoolVar(&quick, "quick", false, "tiny sizes for a smoke run (flags given explicitly still apply)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "trellis bench: unexpected arguments %q\n", fs.Args())
		return ExitUsage
	}
	base := def
	if quick {
		base = bench.QuickOptions()
	}
	opts.Options = base
	opts.Keep = keep
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	opts.DatabaseURL = dbURL
	opts.Engine = engine
	if set["scenarios"] {
		opts.Scenarios = splitList(*scenarios)
	}
	if set["workers"] {
		ws, err := parseInts(*workers)
		if err != nil {
			fmt.Fprintf(stderr, "trellis bench: -workers: %v\n", err)
			return ExitUsage
		}
		opts.Workers = ws
	}
	ints := map[string]struct {
		dst *int
		v   int
	}{"runs": {&opts.Runs, *runs}, "memory-runs": {&opts.MemoryRuns, *memRuns}, "max-backlog": {&opts.MaxBacklog, *backlog}, "sleepers": {&opts.Sleepers, *sleepers},
		"purge-runs": {&opts.PurgeRuns, *purgeRuns}, "map-items": {&opts.MapItems, *mapItems},
		"history-runs": {&opts.HistoryRuns, *history},
	}
	for name, f := range ints {
		if set[name] {
			*f.dst = f.v
		}
	}
	if set["steady-duration"] {
		opts.SteadyDuration, opts.SteadyWarmup = *steady, *steady/4
	}
	if set["sleep"] {
		opts.Sleep = *sleep
	}
	cmd, err := bench.SelfWorkerCommand(c.Name(), benchWorkerArg)
	if err != nil {
		fmt.Fprintf(stderr, "trellis bench: %v\n", err)
		return ExitProblems
	}
	opts.WorkerCommand = cmd
	opts.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	return Bench(ctx, opts, stdout, stderr)
}

// Bench runs trellis bench with opts and returns its exit code: the
// results are printed even when a scenario failed (exit 1).
func Bench(ctx context.Context, opts BenchOptions, stdout, stderr io.Writer) int {
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(stderr, "trellis bench: %v\n", err)
		return ExitUsage
	}
	res, err := bench.Run(ctx, opts.Options)
	if res == nil {
		fmt.Fprintf(stderr, "trellis bench: %v\n", err)
		return ExitProblems
	}
	if opts.JSON {
		if werr := bench.WriteJSON(stdout, res); werr != nil {
			fmt.Fprintf(stderr, "trellis bench: %v\n", werr)
			return ExitProblems
		}
	} else {
		bench.Report(stdout, res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "trellis bench: %v\n", err)
		return ExitProblems
	}
	return ExitOK
}

// defaultDatabaseURL is $TRELLIS_DATABASE_URL, else the local server.
func defaultDatabaseURL() string {
	if u := os.Getenv("TRELLIS_DATABASE_URL"); u != "" {
		return u
	}
	return bench.DefaultDatabaseURL
}

// dropTime leaves the time out of progress lines.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
