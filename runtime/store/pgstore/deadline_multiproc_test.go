package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// A run's deadline is a durable timer: the only worker is killed with
// SIGKILL while the run sleeps, the deadline passes while no worker runs,
// and a fresh worker fails the run at once, before the sleep's children
// can run.
func TestRunDeadlineFiresAfterTheOnlyWorkerIsKilled(t *testing.T) {
	c := newCluster(t)
	c.start("w0")
	ref, err := c.fulfil.RunNoWait(t.Context(), multiproc.FulfilInput{Order: 1}, runtime.WithTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the run sleeps", func() bool {
		var status string
		err := c.pool.QueryRow(t.Context(), `SELECT status FROM trellis_tasks WHERE run_id = $1 AND step = 10`, ref.ID).Scan(&status)
		return err == nil && status == "SLEEPING"
	})
	c.kill9("w0")
	eventually(t, "the deadline passes", func() bool {
		var passed bool
		err := c.pool.QueryRow(t.Context(), `SELECT deadline < now() FROM trellis_runs WHERE id = $1`, ref.ID).Scan(&passed)
		return err == nil && passed
	})
	if res, err := c.engine.Result(t.Context(), ref.ID); err != nil || res.Status != runtime.RunRunning {
		t.Fatalf("with no worker, the run is %v (%v), want RUNNING", res, err)
	}
	c.start("w1")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = c.engine.Wait(ctx, ref.ID)
	var failed *runtime.RunFailedError
	if !errors.As(err, &failed) || !failed.Deadline || failed.Message != "run deadline of 4s passed" {
		t.Fatalf("Wait = %v, want the run failed at its deadline", err)
	}
	if n := c.executions()[ref.ID.String()+"/ship"]; n != 0 {
		t.Errorf("ship ran %d times after the deadline", n)
	}
}

// A delayed start is a durable timer: the only worker is killed with
// SIGKILL before the start, the start passes while no worker runs, and a
// fresh worker starts the run, once.
func TestDelayedRunStartsAfterTheOnlyWorkerIsKilled(t *testing.T) {
	c := newCluster(t)
	c.start("w0")
	eventually(t, "w0 leads", func() bool { return c.leader() == "w0" })
	ref, err := c.ping.RunNoWait(t.Context(), multiproc.PingInput{}, runtime.WithStartAfter(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c.kill9("w0")
	eventually(t, "the start passes", func() bool {
		var passed bool
		err := c.pool.QueryRow(t.Context(), `SELECT start_at < now() FROM trellis_runs WHERE id = $1`, ref.ID).Scan(&passed)
		return err == nil && passed
	})
	if n := c.executions()[ref.ID.String()+"/pong"]; n != 0 {
		t.Fatalf("pong ran %d times before a worker started the run", n)
	}
	c.start("w1")
	c.waitDone([]runtime.RunID{ref.ID}, time.Minute)
	if n := c.executions()[ref.ID.String()+"/pong"]; n != 1 {
		t.Errorf("pong ran %d times, want once", n)
	}
}
