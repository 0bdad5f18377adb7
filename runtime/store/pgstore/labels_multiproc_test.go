package pgstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// routedSteps log each execution (exec_log, with the worker's name).
// Render takes a while, so that a worker running one step at a time is
// still busy with the backlog when others join.
type routedSteps struct{ rec *recorder }

func (s routedSteps) Render(ctx context.Context, _ multiproc.RoutedInput) error {
	select {
	case <-time.After(30 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.rec.record(ctx)
}

func (s routedSteps) Plain(ctx context.Context, _ multiproc.RoutedInput) error {
	return s.rec.record(ctx)
}

func (s routedSteps) Notify(ctx context.Context, _ multiproc.RoutedInput, _ multiproc.RoutedNotifyParents) error {
	return s.rec.record(ctx)
}

// TestLabelsRouteAcrossProcesses runs the routed workflow (render needs
// gpu=true; plain and notify need nothing) on two worker processes, one
// with the label and one without: render runs only on the labelled
// worker, the other steps on both, every run completes, and one
// tenant's backlog of labelled tasks does not hold another tenant's
// back on the labelled worker.
func TestLabelsRouteAcrossProcesses(t *testing.T) {
	c := newCluster(t)
	ctx := t.Context()
	// Before any worker runs: a backlog of tenant big, then one run of
	// tenant small.
	var ids []runtime.RunID
	for i := range 30 {
		ref, err := c.routed.RunNoWait(ctx, multiproc.RoutedInput{N: int64(i)}, runtime.WithTenant("big"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	small, err := c.routed.RunNoWait(ctx, multiproc.RoutedInput{N: 100}, runtime.WithTenant("small"))
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, small.ID)

	// The labelled worker alone, one step at a time: it takes tasks in
	// the queue's fair order, so small's render comes among its first.
	c.start("gpu-one-1")
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := c.pool.QueryRow(ctx, `SELECT count(*) FROM exec_log`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gpu worker ran %d steps in a minute", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Then the unlabelled worker joins.
	c.start("cpu-1")
	c.waitDone(ids, 2*time.Minute)

	type execution struct{ run, step, worker string }
	rows, err := c.pool.Query(ctx, `SELECT run_id::text, step, worker FROM exec_log ORDER BY at`)
	if err != nil {
		t.Fatal(err)
	}
	var log []execution
	for rows.Next() {
		var e execution
		if err := rows.Scan(&e.run, &e.step, &e.worker); err != nil {
			t.Fatal(err)
		}
		log = append(log, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := 3 * len(ids); len(log) != want {
		t.Fatalf("logged %d step executions, want %d (each step of each run once)", len(log), want)
	}
	ranOn := map[string]map[string]int{} // step -> worker -> executions
	var gpuRenders []string              // the runs whose render the gpu worker ran, in order
	for _, e := range log {
		if ranOn[e.step] == nil {
			ranOn[e.step] = map[string]int{}
		}
		ranOn[e.step][e.worker]++
		if e.step == "render" {
			gpuRenders = append(gpuRenders, e.run)
		}
	}
	if n := ranOn["render"]["cpu-1"]; n != 0 {
		t.Errorf("the worker without gpu=true ran render %d times, want never", n)
	}
	if n := ranOn["render"]["gpu-one-1"]; n != len(ids) {
		t.Errorf("the gpu worker ran render %d times, want %d", n, len(ids))
	}
	for _, step := range []string{"plain", "notify"} {
		if ranOn[step]["cpu-1"]+ranOn[step]["gpu-one-1"] != len(ids) {
			t.Errorf("step %s ran on %v, want once per run", step, ranOn[step])
		}
	}
	if ranOn["plain"]["cpu-1"] == 0 || ranOn["plain"]["gpu-one-1"]+ranOn["notify"]["gpu-one-1"] == 0 {
		t.Errorf("unlabelled steps ran on %v (plain) and %v (notify), want some on each worker", ranOn["plain"], ranOn["notify"])
	}
	// Fair order on the labelled worker: tenant small's render is among
	// the first it ran (the queue alternates tenants: big's first render,
	// small's, ...), not behind big's 30.
	pos := slices.Index(gpuRenders, small.ID.String())
	if pos < 0 || pos > 2 {
		t.Errorf("the gpu worker ran small's render as its render number %d (0-based) of %d, want among the first 3", pos, len(gpuRenders))
	}
	t.Logf("render on %v; plain on %v; notify on %v; small's render was number %d", ranOn["render"], ranOn["plain"], ranOn["notify"], pos)
}
