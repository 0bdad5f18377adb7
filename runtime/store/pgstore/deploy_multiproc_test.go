package pgstore_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/testdata/deploy/flowcode"
	v1 "github.com/effectivelabs/trellis/testdata/deploy/v1"
	v2 "github.com/effectivelabs/trellis/testdata/deploy/v2"
)

// The deploy tests (issue 31) roll out version 2 of a workflow
// (testdata/deploy: step b renamed b2, c's output changed shape) while
// runs of version 1 are in flight, with two worker binaries built from the
// repository: oldworker (version 1) and newworker (version 2, keeping
// version 1 as a former version when asked). Workers are killed with
// SIGKILL in the middle. No run may fail, every run must complete, and
// every task must have run on code of its run's version: each step's
// output says which code and which binary ran it.

// deployCluster is one database schema, the two binaries, and a test
// engine that triggers and reads (it runs no step).
type deployCluster struct {
	t        *testing.T
	url      string
	schema   string
	pool     *pgxpool.Pool
	engine   *runtime.Engine
	store    store.Store
	v1       *v1.FlowClient
	v2       *v2.FlowClient
	old, new string // the binaries
	procs    map[string]*exec.Cmd
}

// deployBinaries builds the two worker binaries once per test binary.
func deployBinaries(t *testing.T) (old, new string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/effectivelabs/trellis/testdata/deploy/oldworker",
		"github.com/effectivelabs/trellis/testdata/deploy/newworker")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the worker binaries: %v\n%s", err, out)
	}
	return filepath.Join(dir, "oldworker"), filepath.Join(dir, "newworker")
}

func newDeployCluster(t *testing.T, old, new string) *deployCluster {
	t.Helper()
	pool, schema := pgtest.PoolWithSchema(t)
	s := pgstore.New(pool)
	engine, err := runtime.New(runtime.Config{Store: s, PollInterval: 100 * time.Millisecond,
		HeartbeatInterval: flowcode.Heartbeat, StaleAfter: flowcode.StaleAfter})
	if err != nil {
		t.Fatal(err)
	}
	c1, err := v1.NewFlowClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := v2.NewFlowClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	return &deployCluster{t: t, url: pgtest.URL(), schema: schema, pool: pool, engine: engine, store: s,
		v1: c1, v2: c2, old: old, new: new, procs: map[string]*exec.Cmd{}}
}

// start runs a worker process of binary; env is added to its environment.
func (c *deployCluster) start(name, binary string, env ...string) {
	c.t.Helper()
	logPath := filepath.Join(c.t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), flowcode.URLEnv+"="+c.url, flowcode.SchemaEnv+"="+c.schema, flowcode.NameEnv+"="+name)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.procs[name] = cmd
	c.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			c.stop(name)
		}
		logFile.Close()
		if c.t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				c.t.Logf("log of worker %s:\n%s", name, tail(string(b), 30))
			}
		}
	})
}

// stop stops a worker gracefully (SIGTERM): it hands its tasks back.
func (c *deployCluster) stop(name string) {
	cmd := c.procs[name]
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// kill9 kills a worker with SIGKILL: its tasks in flight are lost until
// the leader recovers them.
func (c *deployCluster) kill9(name string) {
	c.t.Helper()
	cmd := c.procs[name]
	if err := cmd.Process.Kill(); err != nil {
		c.t.Fatal(err)
	}
	_ = cmd.Wait()
}

// trigger starts n runs of version 1 or 2; every third sleeps in step b
// (b2) for long enough to be in flight when a worker is killed.
func (c *deployCluster) trigger(version, n int) []runtime.RunID {
	c.t.Helper()
	ids := make([]runtime.RunID, n)
	for i := range ids {
		var sleep *int64
		if i%3 == 0 {
			ms := int64(1500)
			sleep = &ms
		}
		var ref runtime.RunRef
		var err error
		if version == 1 {
			ref, err = c.v1.RunNoWait(c.t.Context(), v1.FlowInput{N: int64(i), SleepMs: sleep})
		} else {
			ref, err = c.v2.RunNoWait(c.t.Context(), v2.FlowInput{N: int64(i), SleepMs: sleep})
		}
		if err != nil {
			c.t.Fatal(err)
		}
		ids[i] = ref.ID
	}
	return ids
}

// eventually polls cond until it holds, failing the test after within.
func (c *deployCluster) eventually(what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// holding reports whether worker holds a task.
func (c *deployCluster) holding(worker string) bool {
	ws, err := c.store.ListWorkers(c.t.Context())
	if err != nil {
		c.t.Fatal(err)
	}
	return slices.ContainsFunc(ws, func(w store.Worker) bool { return w.ID == worker && w.Leases > 0 })
}

// runs reads runs with their tasks.
func (c *deployCluster) runs(ids []runtime.RunID) []store.RunWithTasks {
	c.t.Helper()
	runs, err := c.store.GetRuns(c.t.Context(), ids)
	if err != nil || len(runs) != len(ids) {
		c.t.Fatalf("GetRuns: %d of %d runs, %v", len(runs), len(ids), err)
	}
	return runs
}

// noneFailed checks that no run of ids failed or was cancelled.
func (c *deployCluster) noneFailed(ids []runtime.RunID) {
	c.t.Helper()
	for _, r := range c.runs(ids) {
		if r.Status != store.RunRunning && r.Status != store.RunCompleted {
			c.t.Fatalf("run %s of %s is %s: %+v", r.ID, r.Version, r.Status, r.Failure)
		}
	}
}

// waitDone waits until every run has completed.
func (c *deployCluster) waitDone(ids []runtime.RunID, within time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), within)
	defer cancel()
	for _, id := range ids {
		res, err := c.engine.Wait(ctx, id)
		if err != nil || res.Status != runtime.RunCompleted {
			c.t.Fatalf("run %s: %v (%+v)", id, err, res)
		}
	}
}

// ranOwnCode checks that every task of each run ran on code of its run's
// version, and returns the binaries that ran tasks of the runs.
func (c *deployCluster) ranOwnCode(ids []runtime.RunID, code string) map[string]int {
	c.t.Helper()
	binaries := map[string]int{}
	for _, r := range c.runs(ids) {
		if len(r.Tasks) != 3 {
			c.t.Fatalf("run %s of %s has %d tasks", r.ID, r.Version, len(r.Tasks))
		}
		for _, task := range r.Tasks {
			var out struct{ Code, Binary string }
			if err := json.Unmarshal(task.Output, &out); err != nil || out.Code != code {
				c.t.Errorf("run %s (%s), step %d ran on code %q (output %s, %v), want %s", r.ID, r.Version, task.Key.Step, out.Code, task.Output, err, code)
			}
			binaries[out.Binary]++
		}
	}
	return binaries
}

func TestDeployMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process tests are skipped in -short mode")
	}
	old, new := deployBinaries(t)
	t.Run("NewBinaryAloneThenOldComesBack", func(t *testing.T) { testDeployNewAlone(t, newDeployCluster(t, old, new)) })
	t.Run("NewBinaryKeepsTheFormerVersion", func(t *testing.T) { testDeployKeepsFormer(t, newDeployCluster(t, old, new)) })
}

// (i) The old binaries stop (one killed in the middle of steps, one
// stopped), the new binary alone serves version 2: the runs of version 1
// wait, shown as unserved, none fails; an old binary comes back and
// finishes them.
func testDeployNewAlone(t *testing.T, c *deployCluster) {
	c.start("old-1", c.old)
	c.start("old-2", c.old)
	old := c.trigger(1, 12)
	c.eventually("old-1 holds a task", 30*time.Second, func() bool { return c.holding("old-1") })
	c.kill9("old-1")
	c.stop("old-2")

	c.start("new-1", c.new)
	fresh := c.trigger(2, 6)
	c.waitDone(fresh, time.Minute)
	v1Version := c.v1.Workflow().Definition().Version()
	c.eventually("the runs of version 1 show as unserved", time.Minute, func() bool {
		u, err := c.engine.Unserved(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return len(u) == 1 && u[0].Version == v1Version && u[0].Queued > 0
	})
	c.noneFailed(old)
	for _, r := range c.runs(old) {
		for _, task := range r.Tasks {
			var out struct{ Code string }
			if task.Status == store.TaskCompleted && (json.Unmarshal(task.Output, &out) != nil || out.Code != "v1") {
				t.Fatalf("run %s of version 1: step %d ran on code %q while no worker served it", r.ID, task.Key.Step, out.Code)
			}
		}
	}

	c.start("old-3", c.old)
	c.waitDone(old, 2*time.Minute)
	c.noneFailed(old)
	if got := c.ranOwnCode(old, "v1"); got["new"] > 0 || got["old"] != 3*len(old) {
		t.Errorf("the tasks of version 1 ran on binaries %v, want all on old ones", got)
	}
	if got := c.ranOwnCode(fresh, "v2"); got["new"] != 3*len(fresh) {
		t.Errorf("the tasks of version 2 ran on binaries %v, want all on the new one", got)
	}
	if u, err := c.engine.Unserved(t.Context()); err != nil || len(u) != 0 {
		t.Errorf("Unserved = %+v, %v; want nothing", u, err)
	}
}

// (ii) The new binary keeps version 1 as a former version: it finishes
// everything, the tasks an old binary killed in the middle held included.
func testDeployKeepsFormer(t *testing.T, c *deployCluster) {
	c.start("old-1", c.old)
	old := c.trigger(1, 12)
	c.eventually("old-1 holds a task", 30*time.Second, func() bool { return c.holding("old-1") })
	c.start("new-1", c.new, flowcode.FormerEnv+"=1")
	fresh := c.trigger(2, 6)
	c.kill9("old-1")
	more := c.trigger(1, 3) // a client built with the old version goes on triggering it
	old = append(old, more...)

	c.waitDone(fresh, time.Minute)
	c.waitDone(old, 2*time.Minute)
	c.noneFailed(old)
	c.noneFailed(fresh)
	if got := c.ranOwnCode(old, "v1"); got["new"] == 0 {
		t.Errorf("the tasks of version 1 ran on binaries %v, want some on the new one, which keeps version 1", got)
	}
	c.ranOwnCode(fresh, "v2")
}
