package pgstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// BenchmarkTaskCycle is what a task of a chain of five costs the
// database: each op claims 100 tasks and records their results, as an
// engine does, with a backlog of 2,000 queued tasks of 10 tenants kept up
// (untimed) by new runs. It reports the server's CPU for the claim and for
// the results per task (claim-pg-µs/task, finish-pg-µs/task), read from
// /proc with a local server on Linux: steadier than throughput, so that
// a change to the hot statements can be measured alone. Run it with
// -benchtime 300x -count 5 or so; VACUUM runs every 20 ops, as the
// leader's maintenance would.
func BenchmarkTaskCycle(b *testing.B) { taskCycle(b, false) }

// BenchmarkTaskCycleHandOff is BenchmarkTaskCycle the way an engine runs
// chains now: each op records 100 results and takes the children they
// make ready as hand-offs (store.HandOff), and claims only to fill the
// batch up (with the new runs' roots). One tenant: with several, a child
// is handed off only when the queue's head is of its tenant (else it is
// queued, and this would measure the queue). It reports the server's CPU per
// task for the claims and for the results (hand-offs included).
func BenchmarkTaskCycleHandOff(b *testing.B) { taskCycle(b, true) }

// taskCycle runs BenchmarkTaskCycle, or with handOff
// BenchmarkTaskCycleHandOff.
func taskCycle(b *testing.B, handOff bool) {
	const (
		batch   = 100
		backlog = 2000
		steps   = 5
	)
	tenants := 10
	if handOff {
		tenants = 1
	}
	ctx := b.Context()
	pool, backend := onePool(b)
	s := pgstore.New(pool)
	now := time.Now()
	children, create := chainRunMaker(b, s, now, steps, tenants)
	create(backlog)
	var claimCPU, finishCPU time.Duration
	cpuKnown := true
	var running []store.ClaimedTask // handed off by the last op
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		create(batch / steps)
		if i%20 == 0 {
			if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) trellis_ready, trellis_leases, trellis_tasks, trellis_runs`); err != nil {
				b.Fatal(err)
			}
		}
		want := batch - len(running)
		t0, ok0 := cpuTime(backend)
		b.StartTimer()
		got, err := s.ClaimTasks(ctx, store.Claim{Worker: "bench", Limit: want, Now: now})
		b.StopTimer()
		t1, ok1 := cpuTime(backend)
		if err != nil || len(got) != want {
			b.Fatalf("claimed %d tasks, %v; want %d", len(got), err, want)
		}
		running = append(running, got...)
		r := store.Results{Now: now}
		if handOff {
			r.HandOff = store.HandOff{Worker: "bench", Versions: []string{"w@1"}, Limit: batch}
		}
		for _, c := range running {
			r.Completions = append(r.Completions, store.Completion{
				Attempt: store.Attempt{Key: c.Key, Attempt: c.Attempt}, Output: []byte(`{}`), Children: children[c.Key.Step],
			})
		}
		b.StartTimer()
		res, err := s.Finish(ctx, r)
		b.StopTimer()
		t2, ok2 := cpuTime(backend)
		if err != nil {
			b.Fatal(err)
		}
		running = res.HandedOff
		claimCPU += t1 - t0
		finishCPU += t2 - t1
		cpuKnown = cpuKnown && ok0 && ok1 && ok2
		b.StartTimer()
	}
	if cpuKnown {
		per := float64(b.N * batch)
		b.ReportMetric(float64(claimCPU.Microseconds())/per, "claim-pg-µs/task")
		b.ReportMetric(float64(finishCPU.Microseconds())/per, "finish-pg-µs/task")
	}
}

// chainRunMaker returns children (each step's of a chain of steps steps)
// and a function that creates count chain runs, their tenants taken in
// turn from tenants of them.
func chainRunMaker(b *testing.B, s *pgstore.Store, now time.Time, steps, tenants int) ([][]int, func(count int)) {
	n := 0
	children := make([][]int, steps)
	for i := range steps - 1 {
		children[i] = []int{i + 1}
	}
	create := func(count int) {
		runs := make([]store.NewRun, count)
		for i := range runs {
			tasks := make([]store.NewTask, steps)
			for j := range tasks {
				tasks[j] = store.NewTask{Step: j, Kind: store.KindCode, Plain: true, MaxAttempts: 1}
				if j > 0 {
					tasks[j].Parents, tasks[j].Pending = []int{j - 1}, 1
				}
			}
			runs[i] = store.NewRun{
				ID: uuid.Must(uuid.NewV7()), Workflow: "w", Version: "w@1", Tenant: fmt.Sprintf("tenant-%d", n%tenants),
				Input: []byte(`{}`), Tasks: tasks,
			}
			n++
		}
		if _, err := s.CreateRuns(b.Context(), store.CreateRuns{Runs: runs, Now: now}); err != nil {
			b.Fatal(err)
		}
	}
	return children, create
}
