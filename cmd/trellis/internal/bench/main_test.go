package bench

import (
	"bufio"
	"context"
	"flag"
	"fmt"
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
	switch os.Getenv(workerEnv) {
	case "1":
		os.Exit(workerMain(os.Args[1:]))
	case "stuck":
		os.Exit(stuckWorkerMain())
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
	o := WorkerOptions{DatabaseURL: os.Getenv(DatabaseURLEnv)}
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

// stuckWorkerMain is a worker process that never works: it says it is
// ready, and when told to go logs the error a worker whose every claim
// fails would, then waits to be stopped.
func stuckWorkerMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if _, err := fmt.Println(workerReady); err != nil {
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == workerGo {
			break
		}
	}
	slog.New(slog.NewTextHandler(os.Stderr, nil)).Error("claiming tasks failed", "error", "permission denied for table trellis_ready")
	<-ctx.Done()
	return 0
}

// stuckWorkers re-executes the test binary as a stuck worker.
func stuckWorkers(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), workerEnv+"=stuck")
	return cmd
}

// testWorkers re-executes the test binary as a worker.
func testWorkers(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	return cmd
}
