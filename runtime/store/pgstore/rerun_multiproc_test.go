package pgstore_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
)

// A run rerun from a step whose worker is killed in the middle of that
// step completes on another worker: the steps above it never run again,
// the step runs again after the kill (at least once, as any step), and
// the steps below it run once more each, nothing lost or doubled.
func TestRerunWhoseWorkerIsKilledCompletesElsewhere(t *testing.T) {
	c := newCluster(t)
	for _, w := range []string{"w0", "w1", "w2"} {
		c.start(w)
	}
	// pick-3 of a slow order blocks on the first attempt of each try
	// until its worker dies: once in the run's first execution, and once
	// in its rerun, whose retry budget starts afresh.
	id := c.triggerFulfil(1, func(int) bool { return true })[0]
	killPick3 := func(attempt int) (victim string, pid int) {
		t.Helper()
		eventually(t, "pick-3 starts its attempt", func() bool {
			err := c.pool.QueryRow(t.Context(), `SELECT pid FROM exec_log WHERE run_id = $1 AND step = 'pick-3' AND attempt = $2`,
				id, attempt).Scan(&pid)
			return err == nil
		})
		if victim = c.workerByPid(pid); victim == "" {
			t.Fatalf("no worker has pid %d", pid)
		}
		c.kill9(victim)
		return victim, pid
	}
	killPick3(1) // the steps it ran beside pick-3 ran again elsewhere
	c.waitDone([]runtime.RunID{id}, 2*time.Minute)
	before := c.executions()

	if err := c.engine.RerunRun(t.Context(), id, "pick-3"); err != nil {
		t.Fatal(err)
	}
	victim, pid := killPick3(3)
	c.waitDone([]runtime.RunID{id}, 2*time.Minute)

	var attempts, pids []int
	rows, err := c.pool.Query(t.Context(), `SELECT attempt, pid FROM exec_log WHERE run_id = $1 AND step = 'pick-3' ORDER BY at`, id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a, p int
		if err := rows.Scan(&a, &p); err != nil {
			t.Fatal(err)
		}
		attempts, pids = append(attempts, a), append(pids, p)
	}
	rows.Close()
	if !slices.Equal(attempts, []int{1, 2, 3, 4}) || pids[3] == pid {
		t.Errorf("pick-3: attempts %v on pids %v (the rerun's killed on %d); want 1 to 4, the last on another worker", attempts, pids, pid)
	}
	after := c.executions()
	for _, step := range fulfilCodeSteps {
		want := 0 // above pick-3, or beside it: kept
		switch step {
		case "pick-3":
			want = 2 // killed, then run elsewhere
		case "pack", "ship":
			want = 1 // below it: once more
		}
		key := id.String() + "/" + step
		if n := after[key] - before[key]; n != want {
			t.Errorf("the rerun executed step %s %d times, want %d", step, n, want)
		}
	}
	events, err := c.engine.Events(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	rerun, recovered := false, false
	for _, ev := range events {
		rerun = rerun || ev.Step == "pick-3" && ev.Type == runtime.EventQueued && ev.Detail == "rerun from pick-3"
		recovered = recovered || ev.Step == "pick-3" && ev.Type == runtime.EventRetrying && ev.Attempt == 3 &&
			strings.Contains(ev.Detail, "worker "+victim+" stopped heartbeating")
	}
	if !rerun || !recovered {
		t.Errorf("the event log shows the rerun %v and the recovery of attempt 3 from %s %v: %+v", rerun, victim, recovered, events)
	}
}
