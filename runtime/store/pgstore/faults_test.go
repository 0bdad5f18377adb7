package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// The fault suite runs the chaos workflow (a -> (b, c) -> d -> nap (2s)
// -> e, with conditions, retries and a planned failure) on three worker
// processes against a throwaway Postgres cluster of its own, and injects
// real faults: kill -9 of workers and of the leader, Postgres stopped and
// crashed during a burst of triggers, and connections terminated at
// random (pg_terminate_backend, as a network cut does). Each test then
// asserts, from the database:
//
//   - no run is lost: every run triggered ends COMPLETED, within a bound
//     after the last fault, and nothing is left running, queued, leased
//     or waiting on a timer;
//   - no step ran or was queued before its parents resolved, no task's
//     events go back in time, and the nap woke no earlier than 2s after
//     it began to sleep;
//   - the only steps that ran twice are ones that were in flight
//     (leased) in a killed process, reported per kill;
//   - no worker panicked, raced or met a deadlock.
//
// The short version runs with the tests; TRELLIS_SOAK=1 (make soak) runs
// ten times the runs and five times the faults.

// faultSize is how big a fault test is.
type faultSize struct {
	runs     int // runs triggered
	kills    int // kill -9s
	restarts int // Postgres stops and crashes
}

func faultSizes() faultSize {
	if os.Getenv("TRELLIS_SOAK") != "" {
		return faultSize{runs: 3000, kills: 20, restarts: 6}
	}
	return faultSize{runs: 300, kills: 4, restarts: 2}
}

// settleBound is how long after the last fault every run must have
// ended: a dead worker's tasks wait StaleAfter (2s) to be recovered, the
// nap takes 2s, and the backlog left by the faults must drain.
const settleBound = 60 * time.Second

// chaosSteps names the chaos workflow's steps by index.
var chaosStepNames = []string{"a", "b", "c", "d", "nap", "e"}

var chaosParents = map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}, "nap": {"d"}, "e": {"nap"}}

// journal logs each execution of a chaos step once, whatever happens to
// connections meanwhile: an insert whose answer was lost is retried under
// the same execution id.
type journal struct {
	pool   *pgxpool.Pool
	worker string
}

// record journals an execution: its attempt, and the attempt of step a
// whose output it read (0 for a itself).
func (j *journal) record(ctx context.Context, plannedFail bool, parentAttempt int64) error {
	info, _ := runtime.InfoFromContext(ctx)
	id := uuid.New()
	for {
		_, err := j.pool.Exec(ctx, `INSERT INTO chaos_log (exec_id, run_id, step, attempt, parent_attempt, worker, pid, planned_fail)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (exec_id) DO NOTHING`,
			id, info.RunID, info.Step, info.Attempt, parentAttempt, j.worker, os.Getpid(), plannedFail)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(chaosWork):
		return nil
	}
}

// chaosWork is how long a chaos step works after journaling, so that a
// kill -9 catches steps in flight, whose tasks must then run again.
const chaosWork = 10 * time.Millisecond

type chaosSteps struct{ journal *journal }

func (s *chaosSteps) A(ctx context.Context, in multiproc.ChaosInput) (multiproc.ChaosAOutput, error) {
	info, _ := runtime.InfoFromContext(ctx)
	return multiproc.ChaosAOutput{N: in.N, Attempt: int64(info.Attempt)}, s.journal.record(ctx, false, 0)
}

func (s *chaosSteps) B(ctx context.Context, _ multiproc.ChaosInput, p multiproc.ChaosBParents) error {
	return s.journal.record(ctx, false, p.A.Attempt)
}

func (s *chaosSteps) C(ctx context.Context, _ multiproc.ChaosInput, p multiproc.ChaosCParents) error {
	return s.journal.record(ctx, false, p.A.Attempt)
}

// D fails its first attempt for every fourth run.
func (s *chaosSteps) D(ctx context.Context, in multiproc.ChaosInput, _ multiproc.ChaosDParents) error {
	info, _ := runtime.InfoFromContext(ctx)
	planned := in.N%4 == 0 && info.Retries == 0
	if err := s.journal.record(ctx, planned, 0); err != nil {
		return err
	}
	if planned {
		return errors.New("planned failure")
	}
	return nil
}

func (s *chaosSteps) E(ctx context.Context, _ multiproc.ChaosInput, _ multiproc.ChaosEParents) error {
	return s.journal.record(ctx, false, 0)
}

// faultRig is a cluster of chaos workers on a throwaway server.
type faultRig struct {
	*cluster
	srv       *pgtest.Server
	names     int
	kills     []*kill
	lastFault time.Time
	triggered time.Time // when the last trigger returned
}

// kill is one kill -9 and what the killed process held.
type kill struct {
	victim string
	pid    int
	leader bool
	held   map[string]bool // run/step of the tasks it held
	reran  int             // of those, how many ran again
}

func newFaultRig(t *testing.T) *faultRig {
	t.Helper()
	if testing.Short() {
		t.Skip("the fault suite is skipped in -short mode")
	}
	srv := pgtest.NewServer(t)
	r := &faultRig{cluster: newClusterAt(t, srv.URL()), srv: srv}
	if _, err := r.pool.Exec(t.Context(), `CREATE TABLE chaos_log (
		exec_id uuid PRIMARY KEY, run_id uuid NOT NULL, step text NOT NULL, attempt int NOT NULL,
		parent_attempt int NOT NULL, worker text NOT NULL, pid int NOT NULL, planned_fail boolean NOT NULL,
		at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.startNew()
	}
	return r
}

// startNew starts a worker under a name never used before.
func (r *faultRig) startNew() string {
	name := fmt.Sprintf("w%d", r.names)
	r.names++
	r.start(name)
	return name
}

// trigger starts runs from..to-1 of the chaos workflow, spread over
// tenants, from workers goroutines, pacing each goroutine by pace. A
// trigger that fails (the database is down) is retried with the same
// idempotency key until it succeeds, so a run is created once however
// often its trigger is retried.
func (r *faultRig) trigger(from, to, workers int, pace time.Duration) []runtime.RunID {
	r.t.Helper()
	ids := make([]runtime.RunID, to-from)
	var mu sync.Mutex
	var errs []error
	var group sync.WaitGroup
	for w := range workers {
		group.Add(1)
		go func() {
			defer group.Done()
			for i := from + w; i < to; i += workers {
				deadline := time.Now().Add(2 * time.Minute)
				for {
					ref, err := r.chaos.RunNoWait(r.t.Context(), multiproc.ChaosInput{N: int64(i)},
						runtime.WithIdempotencyKey(fmt.Sprintf("chaos-%d", i)), runtime.WithTenant(fmt.Sprintf("t%d", i%3)))
					if err == nil {
						ids[i-from] = ref.ID
						break
					}
					if time.Now().After(deadline) {
						mu.Lock()
						errs = append(errs, fmt.Errorf("run %d: %w", i, err))
						mu.Unlock()
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
				time.Sleep(pace)
			}
		}()
	}
	group.Wait()
	r.triggered = time.Now()
	if len(errs) > 0 {
		r.t.Fatalf("triggers failed for good: %v", errors.Join(errs...))
	}
	return ids
}

// kill9 kills a worker (the leader, or another) with SIGKILL, reads what
// it held, and starts a replacement: under a new name, or every third
// time under the same name, as a restarted pod would be.
func (r *faultRig) kill9(leader bool) {
	r.t.Helper()
	victim := r.leader()
	if !leader || victim == "" {
		var others []string
		for name, cmd := range r.workers {
			if cmd.ProcessState == nil && name != victim {
				others = append(others, name)
			}
		}
		sort.Strings(others)
		victim = others[rand.IntN(len(others))]
		leader = false
	}
	k := &kill{victim: victim, pid: r.workers[victim].Process.Pid, leader: leader, held: map[string]bool{}}
	r.cluster.kill9(victim)
	r.lastFault = time.Now()
	rows, err := r.pool.Query(r.t.Context(), `SELECT run_id, step FROM trellis_leases WHERE worker = $1`, victim)
	if err != nil {
		r.t.Fatal(err)
	}
	for rows.Next() {
		var run uuid.UUID
		var step int16
		if err := rows.Scan(&run, &step); err != nil {
			r.t.Fatal(err)
		}
		k.held[run.String()+"/"+chaosStepNames[step]] = true
	}
	rows.Close()
	r.kills = append(r.kills, k)
	if len(r.kills)%3 == 0 {
		r.start(victim)
	} else {
		r.startNew()
	}
}

// restart stops Postgres (fast: as an operator's restart; immediate: a
// crash), keeps it down for a moment, and starts it again.
func (r *faultRig) restart(mode string, down time.Duration) {
	r.t.Helper()
	r.srv.Stop(mode)
	time.Sleep(down)
	r.srv.Start()
	r.lastFault = time.Now()
}

// check waits for every run and asserts the suite's invariants.
func (r *faultRig) check(ids []runtime.RunID) {
	t := r.t
	t.Helper()
	// Runs triggered after the last fault need time of their own.
	since := r.lastFault
	if r.triggered.After(since) {
		since = r.triggered
	}
	ctx, cancel := context.WithDeadline(t.Context(), since.Add(settleBound))
	defer cancel()
	for _, id := range ids {
		res, err := r.engine.Wait(ctx, id)
		if err != nil || res.Status != runtime.RunCompleted {
			t.Fatalf("run %s did not complete within %v of the last fault: %v, %+v", id, settleBound, err, res)
		}
	}
	t.Logf("%d runs completed %v after the last fault, %v after the last trigger", len(ids),
		time.Since(r.lastFault).Round(time.Millisecond), time.Since(r.triggered).Round(time.Millisecond))
	r.checkNothingLeft(ids)
	resolved, attempts := r.checkEvents(ids)
	r.checkExecutions(resolved)
	r.checkAttempts(attempts)
	r.checkLogs()
}

func (r *faultRig) checkNothingLeft(ids []runtime.RunID) {
	t := r.t
	t.Helper()
	var leases, ready, timers, unfinished, runs int
	err := r.pool.QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM trellis_leases), (SELECT count(*) FROM trellis_ready), (SELECT count(*) FROM trellis_timers),
		(SELECT count(*) FROM trellis_tasks WHERE status NOT IN ('COMPLETED', 'SKIPPED')),
		(SELECT count(*) FROM trellis_runs WHERE workflow = 'chaos')`).Scan(&leases, &ready, &timers, &unfinished, &runs)
	if err != nil {
		t.Fatal(err)
	}
	if leases+ready+timers+unfinished != 0 {
		t.Errorf("left behind: %d leases, %d queued, %d timers, %d unfinished tasks", leases, ready, timers, unfinished)
	}
	if runs != len(ids) {
		t.Errorf("%d chaos runs in the database, %d triggered", runs, len(ids))
	}
}

type event struct {
	step, typ, detail string
	attempt           int
	at                time.Time
}

// checkEvents checks every run's event log and returns when each step of
// each run resolved (run/step -> time), and the events that name
// attempts (run/step -> events).
func (r *faultRig) checkEvents(ids []runtime.RunID) (map[string]time.Time, map[string][]event) {
	t := r.t
	t.Helper()
	rows, err := r.pool.Query(t.Context(), `SELECT run_id, step, type, attempt, at, coalesce(detail, '') FROM trellis_event_log
		WHERE run_id = ANY ($1) ORDER BY run_id, id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	byRun := map[uuid.UUID][]event{}
	for rows.Next() {
		var run uuid.UUID
		var step int16
		var e event
		if err := rows.Scan(&run, &step, &e.typ, &e.attempt, &e.at, &e.detail); err != nil {
			t.Fatal(err)
		}
		e.step = chaosStepNames[step]
		byRun[run] = append(byRun[run], e)
	}
	rows.Close()
	resolved := map[string]time.Time{}
	attempts := map[string][]event{}
	problems := 0
	report := func(format string, args ...any) {
		if problems++; problems <= 20 {
			t.Errorf(format, args...)
		}
	}
	for run, events := range byRun {
		last := map[string]event{}
		done := map[string]time.Time{}
		var slept time.Time
		for _, e := range events {
			if prev, ok := last[e.step]; ok && e.at.Before(prev.at) {
				report("run %s step %s: %s at %v is earlier than the %s before it at %v", run, e.step, e.typ, e.at, prev.typ, prev.at)
			}
			last[e.step] = e
			attempts[run.String()+"/"+e.step] = append(attempts[run.String()+"/"+e.step], e)
			switch e.typ {
			case "COMPLETED", "SKIPPED":
				done[e.step] = e.at
				resolved[run.String()+"/"+e.step] = e.at
			case "QUEUED", "STARTED":
				for _, p := range chaosParents[e.step] {
					if at, ok := done[p]; !ok || e.at.Before(at) {
						report("run %s step %s %s at %v before its parent %s resolved (%v)", run, e.step, e.typ, e.at, p, at)
					}
				}
			case "SLEEPING":
				slept = e.at
			case "WOKEN":
				if e.at.Sub(slept) < 2*time.Second {
					report("run %s: the nap woke %v after it began to sleep, want at least 2s", run, e.at.Sub(slept))
				}
			}
		}
		for _, step := range chaosStepNames {
			if _, ok := done[step]; !ok {
				report("run %s step %s never resolved", run, step)
			}
		}
	}
	if problems > 20 {
		t.Errorf("... and %d more problems in the event logs", problems-20)
	}
	return resolved, attempts
}

// checkAttempts checks attempt truth: the event log names exactly the
// attempts whose code ran, and children read the output of the attempt
// it recorded. Each execution of a step's code journaled the attempt it
// was told it is (and, for b and c, the attempt of a whose output they
// read). Then:
//   - no two executions of a task share an attempt number;
//   - every execution's attempt has a STARTED event;
//   - every COMPLETED event of a code step, and every RETRYING event for
//     d's planned failure, names an attempt that executed;
//   - every execution of b and c read the output of the attempt of a that
//     a's COMPLETED event names.
func (r *faultRig) checkAttempts(events map[string][]event) {
	t := r.t
	t.Helper()
	rows, err := r.pool.Query(t.Context(), `SELECT run_id, step, attempt, parent_attempt FROM chaos_log`)
	if err != nil {
		t.Fatal(err)
	}
	type execution struct{ attempt, parentAttempt int }
	ran := map[string][]execution{}
	for rows.Next() {
		var run uuid.UUID
		var step string
		var x execution
		if err := rows.Scan(&run, &step, &x.attempt, &x.parentAttempt); err != nil {
			t.Fatal(err)
		}
		ran[run.String()+"/"+step] = append(ran[run.String()+"/"+step], x)
	}
	rows.Close()
	problems, results := 0, 0
	report := func(format string, args ...any) {
		if problems++; problems <= 20 {
			t.Errorf(format, args...)
		}
	}
	completedBy := func(task string) int {
		for _, e := range events[task] {
			if e.typ == "COMPLETED" {
				return e.attempt
			}
		}
		return 0
	}
	for task, xs := range ran {
		started := map[int]bool{}
		for _, e := range events[task] {
			if e.typ == "STARTED" {
				started[e.attempt] = true
			}
		}
		seen := map[int]bool{}
		for _, x := range xs {
			if seen[x.attempt] {
				report("%s: two executions ran as attempt %d", task, x.attempt)
			}
			seen[x.attempt] = true
			if !started[x.attempt] {
				report("%s ran as attempt %d, which has no STARTED event: %+v", task, x.attempt, events[task])
			}
			if x.parentAttempt != 0 {
				run, _, _ := strings.Cut(task, "/")
				if a := completedBy(run + "/a"); x.parentAttempt != a {
					report("%s read the output of a's attempt %d, but a's COMPLETED event names attempt %d", task, x.parentAttempt, a)
				}
			}
		}
	}
	for task, es := range events {
		if strings.HasSuffix(task, "/nap") {
			continue
		}
		for _, e := range es {
			if e.typ != "COMPLETED" && (e.typ != "RETRYING" || !strings.Contains(e.detail, "planned failure")) {
				continue
			}
			results++
			found := false
			for _, x := range ran[task] {
				found = found || x.attempt == e.attempt
			}
			if !found {
				report("%s: %s names attempt %d, which never executed (executions: %+v)", task, e.typ, e.attempt, ran[task])
			}
		}
	}
	if problems > 20 {
		t.Errorf("... and %d more attempt problems", problems-20)
	}
	t.Logf("attempt truth: %d recorded results checked against %d journaled tasks, %d problems", results, len(ran), problems)
}

// checkExecutions checks when steps ran, and that every step that ran
// more often than planned was in flight in a killed process.
func (r *faultRig) checkExecutions(resolved map[string]time.Time) {
	t := r.t
	t.Helper()
	rows, err := r.pool.Query(t.Context(), `SELECT run_id, step, pid, planned_fail, at FROM chaos_log ORDER BY at`)
	if err != nil {
		t.Fatal(err)
	}
	type execution struct {
		pid     int
		planned bool
		at      time.Time
	}
	byTask := map[string][]execution{}
	total := 0
	for rows.Next() {
		var run uuid.UUID
		var step string
		var x execution
		if err := rows.Scan(&run, &step, &x.pid, &x.planned, &x.at); err != nil {
			t.Fatal(err)
		}
		for _, p := range chaosParents[step] {
			if at, ok := resolved[run.String()+"/"+p]; !ok || x.at.Before(at) {
				t.Errorf("run %s step %s ran at %v, before its parent %s resolved (%v)", run, step, x.at, p, at)
			}
		}
		byTask[run.String()+"/"+step] = append(byTask[run.String()+"/"+step], x)
		total++
	}
	rows.Close()
	byPid := map[int]*kill{}
	for _, k := range r.kills {
		byPid[k.pid] = k
	}
	duplicates, unexplained := 0, 0
	for task, xs := range byTask {
		plannedSeen := false
		for _, x := range xs[:len(xs)-1] { // the last execution's result stands
			// A killed process's execution is explained by its kill first:
			// the planned failure may be what ran in it, and then runs
			// again as the same attempt (the kill does not count).
			if k := byPid[x.pid]; k != nil && k.held[task] {
				duplicates++
				k.reran++
				continue
			}
			if x.planned && !plannedSeen {
				plannedSeen = true
				continue
			}
			duplicates++
			if unexplained++; unexplained <= 10 {
				t.Errorf("%s ran again after an execution by pid %d at %v, which held no lease on it when killed (or was not killed)", task, x.pid, x.at)
			}
		}
	}
	for i, k := range r.kills {
		role := "worker"
		if k.leader {
			role = "leader"
		}
		t.Logf("kill %d: %s %s (pid %d) held %d tasks; %d of them ran again", i+1, role, k.victim, k.pid, len(k.held), k.reran)
	}
	t.Logf("%d executions of %d tasks; %d ran more than planned, %d of them unexplained", total, len(byTask), duplicates, unexplained)
}

// checkLogs fails on a panic, a data race or a deadlock in any worker.
func (r *faultRig) checkLogs() {
	t := r.t
	t.Helper()
	handedBack, reconciled := 0, 0
	for _, path := range r.logs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		log := string(b)
		for _, bad := range []string{"panic", "DATA RACE", "deadlock detected", "fatal error"} {
			if i := strings.Index(log, bad); i >= 0 {
				t.Errorf("worker log %s has %q:\n%s", path, bad, tail(log[max(0, i-2000):], 60))
			}
		}
		handedBack += strings.Count(log, "handed tasks back")
		reconciled += strings.Count(log, "runs no attempt for")
	}
	t.Logf("worker logs: %d hand-backs, %d reconciliations that found orphaned tasks", handedBack, reconciled)
}

func TestFaultWorkersAndLeaderKilled(t *testing.T) {
	size := faultSizes()
	r := newFaultRig(t)
	var ids []runtime.RunID
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Pace the triggers so that they last as long as the kills.
		ids = r.trigger(0, size.runs, 1, time.Duration(size.kills)*1750*time.Millisecond/time.Duration(size.runs))
	}()
	for i := range size.kills {
		time.Sleep(time.Duration(1000+rand.IntN(1500)) * time.Millisecond)
		r.kill9(i%2 == 0)
	}
	<-done
	r.check(ids)
}

func TestFaultPostgresRestartedDuringTriggerBurst(t *testing.T) {
	size := faultSizes()
	r := newFaultRig(t)
	// A caller blocked in Wait across every restart must see its run end
	// without being restarted itself.
	canary := r.trigger(size.runs, size.runs+1, 1, 0)[0]
	waited := make(chan error, 1)
	go func() {
		res, err := r.engine.Wait(t.Context(), canary)
		if err == nil && res.Status != runtime.RunCompleted {
			err = fmt.Errorf("status %s", res.Status)
		}
		waited <- err
	}()
	var ids []runtime.RunID
	done := make(chan struct{})
	go func() {
		defer close(done)
		ids = r.trigger(0, size.runs, 4, 0)
	}()
	// The first restart hits the burst; the others hit runs in flight and
	// asleep. Every other one is a crash.
	for i := range size.restarts {
		time.Sleep(time.Duration(300+rand.IntN(1500)) * time.Millisecond)
		mode := "fast"
		if i%2 == 1 {
			mode = "immediate"
		}
		r.restart(mode, time.Duration(200+rand.IntN(1500))*time.Millisecond)
	}
	<-done
	r.check(append(ids, canary))
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("Wait, blocked across the restarts: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait, blocked across the restarts, did not return after its run completed")
	}
}

func TestFaultConnectionsTerminated(t *testing.T) {
	size := faultSizes()
	r := newFaultRig(t)
	var ids []runtime.RunID
	done := make(chan struct{})
	go func() {
		defer close(done)
		ids = r.trigger(0, size.runs, 1, 25*time.Millisecond)
	}()
	terminated := 0
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		case <-time.After(time.Duration(50+rand.IntN(300)) * time.Millisecond):
		}
		var n int
		err := r.pool.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM (
			SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'trellis-worker-%'
			ORDER BY random() LIMIT 1 + (random() * 3)::int) s`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		terminated += n
		r.lastFault = time.Now()
	}
	t.Logf("terminated %d worker connections", terminated)
	r.check(ids)
}
