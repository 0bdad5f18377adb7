package bench

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// workerEnv makes the test binary a bench worker process: the harness's
// WorkerCommand in these tests re-executes the test binary with it.
const workerEnv = "TRELLIS_BENCH_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(workerMain(os.Args[1:]))
	}
	goleak.VerifyTestMain(m,
		// pgxpool checks connections' health from a goroutine of its own
		// that outlives Close briefly.
		goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).triggerHealthCheck.func1"),
	)
}

// workerMain is a worker process, as trellis bench worker is.
func workerMain(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	var o WorkerOptions
	o.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := RunWorker(ctx, o, os.Stdin, os.Stdout, log); err != nil {
		log.Error("worker", "error", err)
		return 1
	}
	return 0
}

// testWorkers re-executes the test binary as a worker.
func testWorkers(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	return cmd
}
