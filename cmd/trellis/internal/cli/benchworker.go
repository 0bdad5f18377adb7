package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/bench"
)

// benchWorkerArg is the word after bench that runs a worker process.
const benchWorkerArg = "worker"

// BenchWorkerCommand is trellis bench worker, the worker process trellis
// bench starts (and so not listed in the usage text): it executes the
// bench workflows with no-op steps until SIGTERM or until its standard
// input ends, then stops gracefully. See bench.RunWorker for the protocol
// it speaks on its standard streams.
type BenchWorkerCommand struct {
	// Stdin is where the harness's instructions come from; os.Stdin when
	// nil.
	Stdin io.Reader
}

// Name implements Command.
func (BenchWorkerCommand) Name() string { return "bench " + benchWorkerArg }

// Summary implements Command.
func (BenchWorkerCommand) Summary() string {
	return "a worker process of trellis bench (started by it)"
}

// Run implements Command.
func (c BenchWorkerCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.Name(), "[flags]",
		"Worker runs the bench workflows with no-op steps for trellis bench, which starts it.\n"+
			"It says ready on stdout, starts its engine when it reads go on stdin, and stops\n"+
			"gracefully on SIGTERM or when stdin ends.")
	opts := bench.WorkerOptions{DatabaseURL: defaultDatabaseURL()}
	opts.Flags(fs)
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if err := opts.Validate(); err != nil {
		fmt.Fprintf(stderr, "trellis %s: %v\n", c.Name(), err)
		return ExitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	stdin := c.Stdin
	if stdin == nil {
		stdin = os.Stdin
	}
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("worker", opts.Name)
	// TRELLIS_BENCH_CPUPROFILE=prefix writes each worker's CPU profile to
	// prefix.<worker name>.<pid>, and what it allocated to the same name
	// with .allocs, for go tool pprof.
	if prefix := os.Getenv("TRELLIS_BENCH_CPUPROFILE"); prefix != "" {
		name := fmt.Sprintf("%s.%s.%d", prefix, opts.Name, os.Getpid())
		f, err := os.Create(name)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "trellis %s: CPU profile: %v\n", c.Name(), err)
			return ExitProblems
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
			if a, err := os.Create(name + ".allocs"); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(a, 0)
				_ = a.Close()
			}
		}()
	}
	if err := bench.RunWorker(ctx, opts, stdin, stdout, log); err != nil {
		fmt.Fprintf(stderr, "trellis %s: %v\n", c.Name(), err)
		return ExitProblems
	}
	return ExitOK
}
