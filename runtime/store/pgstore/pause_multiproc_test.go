package pgstore_test

import (
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// TestPausedWorkflowAcrossRestart pauses a workflow while worker
// processes run it, one of them stuck in a step: the steps running finish,
// and then nothing more of the workflow runs, not when the stuck worker is
// killed and its task recovered, nor when fresh workers start, while
// another workflow runs on. The resume completes every run.
func TestPausedWorkflowAcrossRestart(t *testing.T) {
	c := newCluster(t)
	ctx := t.Context()
	c.start("w0")
	c.start("w1")
	ids := c.triggerFulfil(20, func(i int) bool { return i == 3 })
	slowRun := ids[3]
	var pid int
	eventually(t, "the slow step starts", func() bool {
		return c.pool.QueryRow(ctx, `SELECT pid FROM exec_log WHERE run_id = $1 AND step = 'pick-3'`, slowRun).Scan(&pid) == nil
	})
	if _, err := c.engine.PauseWorkflow(ctx, "fulfil"); err != nil {
		t.Fatal(err)
	}
	// The steps claimed before the pause finish; the slow one holds on.
	leased := func() int {
		var n int
		if err := c.pool.QueryRow(ctx, `SELECT count(*) FROM trellis_leases l JOIN trellis_runs r ON r.id = l.run_id
			WHERE r.workflow = 'fulfil'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	eventually(t, "only the slow step runs", func() bool { return leased() == 1 })
	executed := func() int {
		var n int
		if err := c.pool.QueryRow(ctx, `SELECT count(*) FROM exec_log e JOIN trellis_runs r ON r.id = e.run_id
			WHERE r.workflow = 'fulfil'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := executed()

	// The worker in the slow step dies; the leader recovers its task,
	// whose retry waits out its backoff and is queued, held. Fresh
	// workers start.
	c.kill9(c.workerByPid(pid))
	c.start("w2")
	c.start("w3")
	eventually(t, "the slow step is recovered and queued", func() bool {
		var status string
		err := c.pool.QueryRow(ctx, `SELECT t.status FROM trellis_tasks t JOIN trellis_runs r ON r.id = t.run_id
			WHERE t.run_id = $1 AND t.step = 3`, slowRun).Scan(&status)
		return err == nil && status == "QUEUED" && leased() == 0
	})
	// Another workflow runs on the workers the pause leaves idle.
	var pings []runtime.RunID
	for range 10 {
		ref, err := c.ping.RunNoWait(ctx, multiproc.PingInput{})
		if err != nil {
			t.Fatal(err)
		}
		pings = append(pings, ref.ID)
	}
	c.waitDone(pings, time.Minute)
	if n := executed(); n != before {
		t.Errorf("%d steps of fulfil ran while it was paused, want none", n-before)
	}
	if n := leased(); n != 0 {
		t.Errorf("%d tasks of fulfil claimed while it was paused, want none", n)
	}
	pauses, err := c.engine.PausedWorkflows(ctx)
	if err != nil || len(pauses) != 1 || pauses[0].Queued == 0 {
		t.Errorf("PausedWorkflows = %+v, %v; want fulfil holding tasks", pauses, err)
	}

	if _, err := c.engine.ResumeWorkflow(ctx, "fulfil"); err != nil {
		t.Fatal(err)
	}
	c.waitDone(ids, 2*time.Minute)
	counts := c.executions()
	for _, id := range ids {
		for _, step := range fulfilCodeSteps {
			if counts[id.String()+"/"+step] < 1 {
				t.Errorf("run %s step %s never ran", id, step)
			}
		}
	}
}
