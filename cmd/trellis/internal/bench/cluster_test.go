package bench

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// A worker stops by itself when its standard input ends, which is what
// happens when the harness dies without stopping it.
func TestWorkersStopWhenTheHarnessGoes(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	db, err := openDatabase(t.Context(), o.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.close(context.Background(), false) })
	c, err := startCluster(t.Context(), db, o.WorkerCommand, 2, o.Engine)
	if err != nil {
		t.Fatal(err)
	}
	defer c.kill()
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.procs {
		_ = p.stdin.Close()
	}
	for _, p := range c.procs {
		select {
		case <-p.exited:
			if p.err != nil {
				t.Errorf("worker %s: %v%s", p.name, p.err, p.stderr.excerpt())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("worker %s still running 30s after its standard input closed", p.name)
		}
	}
	if problems := c.logProblems(); len(problems) > 0 {
		t.Errorf("workers logged problems: %v", problems)
	}
}

// Cancelling a case stops it promptly, ends its workers (kill waits for
// them) and drops its schema.
func TestCancelledCaseCleansUp(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	o.SteadyDuration, o.SteadyWarmup = time.Minute, time.Second
	var seen []string
	ctx, cancel := context.WithCancel(t.Context())
	// Cancelled once the case works (its schema made, its workers
	// started), however long getting there takes on a busy machine.
	cancelled := make(chan time.Time, 1)
	var once sync.Once
	o.Log = schemaLoggerCalling(&seen, func(msg string) {
		if msg == "working" {
			once.Do(func() { time.AfterFunc(500*time.Millisecond, func() { cancelled <- time.Now(); cancel() }) })
		}
	})
	_, _, err := Steady(ctx, o, ChainLabel, 2)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Steady after cancel = %v, want context.Canceled", err)
	}
	if d := time.Since(<-cancelled); d > 30*time.Second {
		t.Errorf("Steady took %v to return after cancel", d)
	}
	if len(seen) != 1 || schemasLeft(t, seen...) != 0 {
		t.Errorf("schemas %v: want one, dropped", seen)
	}
}

// A case whose workers never work fails once no task has changed state
// for StallAfter, long before its timeout, and says what they logged.
func TestStuckWorkersFailTheCase(t *testing.T) {
	t.Parallel()
	o := withPostgres(t)
	o.WorkerCommand = stuckWorkers
	o.StallAfter = 2 * time.Second
	start := time.Now()
	_, err := BurnDown(t.Context(), o, ChainLabel, 1)
	if !errors.Is(err, errStalled) || !strings.Contains(err.Error(), "permission denied for table trellis_ready") {
		t.Errorf("BurnDown with stuck workers = %v, want errStalled with the workers' error", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("BurnDown took %v to give up", d)
	}
}
