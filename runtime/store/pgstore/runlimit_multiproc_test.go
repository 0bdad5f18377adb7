package pgstore_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// serialSteps log when each step ran to span_log, as limitedSteps do.
// The first attempt of a slow run's first step logs its start (a span of
// no length) and then blocks until its process dies: the run it belongs
// to keeps its slot while its worker is dead, and after.
type serialSteps struct {
	pool   *pgxpool.Pool
	worker string
}

func (s *serialSteps) span(ctx context.Context, step, customer string, block bool) error {
	info, _ := runtime.InfoFromContext(ctx)
	var start time.Time
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&start); err != nil {
		return err
	}
	if block {
		if _, err := s.pool.Exec(ctx, `INSERT INTO span_log (run_id, step, customer, worker, started_at, ended_at)
			VALUES ($1, 'blocked', $2, $3, $4, $4)`, info.RunID, customer, s.worker, start); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}
	select {
	case <-time.After(10 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO span_log (run_id, step, customer, worker, started_at, ended_at)
		VALUES ($1, $2, $3, $4, $5, clock_timestamp())`, info.RunID, step, customer, s.worker, start)
	return err
}

func (s *serialSteps) First(ctx context.Context, in multiproc.SerialInput) error {
	info, _ := runtime.InfoFromContext(ctx)
	return s.span(ctx, "first", in.Customer, in.Slow != nil && *in.Slow && info.Retries == 0)
}

func (s *serialSteps) Second(ctx context.Context, in multiproc.SerialInput, _ multiproc.SerialSecondParents) error {
	return s.span(ctx, "second", in.Customer, false)
}

// TestRunLimitHoldsAcrossProcessesAndACrash runs the serial workflow
// (runConcurrency max 1 per customer) on two worker processes, kills the
// one running a slow run's first step with SIGKILL, and checks from the
// spans the steps logged that no two runs of a customer were ever in
// progress at once: each run's span, from its first step's first start
// to its last step's end, overlaps no other run of its customer.
func TestRunLimitHoldsAcrossProcessesAndACrash(t *testing.T) {
	c := newCluster(t)
	c.start("w0")
	c.start("w1")
	slow := true
	var inputs []multiproc.SerialInput
	inputs = append(inputs, multiproc.SerialInput{Customer: "ada", Slow: &slow})
	for range 6 {
		for _, cu := range []string{"ada", "bob", "cy"} {
			inputs = append(inputs, multiproc.SerialInput{Customer: cu})
		}
	}
	refs, err := c.serial.RunManyNoWait(t.Context(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	// Kill the worker that runs the slow step, once it runs it.
	var victim string
	deadline := time.Now().Add(time.Minute)
	for victim == "" {
		if time.Now().After(deadline) {
			t.Fatal("the slow step never started")
		}
		err := c.pool.QueryRow(t.Context(), `SELECT worker FROM span_log WHERE step = 'blocked'`).Scan(&victim)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	c.kill9(victim)
	ids := runIDs(refs)
	c.waitDone(ids, 2*time.Minute)

	type runSpan struct {
		customer   string
		start, end time.Time
	}
	rows, err := c.pool.Query(t.Context(), `SELECT run_id, min(customer), min(started_at), max(ended_at), count(*) FILTER (WHERE step <> 'blocked')
		FROM span_log GROUP BY run_id`)
	if err != nil {
		t.Fatal(err)
	}
	var spans []logged
	for rows.Next() {
		var id uuid.UUID
		var sp runSpan
		var steps int
		if err := rows.Scan(&id, &sp.customer, &sp.start, &sp.end, &steps); err != nil {
			t.Fatal(err)
		}
		if steps < 2 { // more when the killed worker ran a step whose result it did not record
			t.Errorf("run %s logged %d step executions, want 2", id, steps)
		}
		spans = append(spans, logged{step: id.String(), customer: sp.customer, start: sp.start, end: sp.end})
	}
	rows.Close()
	if len(spans) != len(ids) {
		t.Fatalf("logged spans of %d runs, want %d", len(spans), len(ids))
	}
	for _, cu := range []string{"ada", "bob", "cy"} {
		if n := mostAtOnce(spans, func(s logged) bool { return s.customer == cu }); n != 1 {
			t.Errorf("customer %s: %d runs were in progress at once, want 1 (runConcurrency max 1)", cu, n)
		}
	}
	all := mostAtOnce(spans, func(logged) bool { return true })
	t.Logf("%d runs; killed %s in the middle of a run; at most %d runs of all customers at once", len(ids), victim, all)
	if all < 2 {
		t.Errorf("at most %d runs of all customers ran at once; the limit is per customer", all)
	}
}

// debouncedSteps log each execution to exec_log.
type debouncedSteps struct{ rec *recorder }

func (s *debouncedSteps) Act(ctx context.Context, _ multiproc.DebouncedInput) error {
	return s.rec.record(ctx)
}

// debounceBurstRuns is how many debounced runs each process of a burst triggers.
const debounceBurstRuns = 25

// triggerBurst triggers debounceBurstRuns debounced runs of one key, one after
// the other, from the time at (Unix nanoseconds) on.
func triggerBurst(ctx context.Context, log *slog.Logger, client *multiproc.DebouncedClient, worker, at string) {
	ns, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		log.Error("burst time", "error", err)
		return
	}
	select {
	case <-time.After(time.Until(time.Unix(0, ns))):
	case <-ctx.Done():
		return
	}
	for n := range debounceBurstRuns {
		if _, err := client.RunNoWait(ctx, multiproc.DebouncedInput{Key: "burst", N: int64(n), From: worker}); err != nil {
			log.Error("burst trigger", "error", err)
			return
		}
	}
}

// TestDebouncedBurstFromTwoProcessesRunsOnce: two worker processes each
// trigger a burst of debounced runs of one key at the same moment; of
// the runs, exactly one executes (its step logged once), and every other
// is cancelled, superseded.
func TestDebouncedBurstFromTwoProcessesRunsOnce(t *testing.T) {
	c := newCluster(t)
	at := strconv.FormatInt(time.Now().Add(3*time.Second).UnixNano(), 10)
	t.Setenv(workerBurstEnv, at)
	c.start("w0")
	c.start("w1")
	ctx := t.Context()
	deadline := time.Now().Add(time.Minute)
	var created, running int
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the bursts did not end: %d runs created, %d running", created, running)
		}
		err := c.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'RUNNING')
			FROM trellis_runs WHERE workflow = 'debounced'`).Scan(&created, &running)
		if err != nil {
			t.Fatal(err)
		}
		if created == 2*debounceBurstRuns && running == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var completed, superseded, executions int
	err := c.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE r.status = 'COMPLETED'),
		count(*) FILTER (WHERE r.status = 'CANCELLED' AND EXISTS (
			SELECT 1 FROM trellis_event_log e WHERE e.run_id = r.id AND e.type = 'CANCELLED' AND e.detail LIKE 'superseded by a newer run %'))
		FROM trellis_runs r WHERE r.workflow = 'debounced'`).Scan(&completed, &superseded)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.pool.QueryRow(ctx, `SELECT count(*) FROM exec_log l JOIN trellis_runs r ON r.id = l.run_id
		WHERE r.workflow = 'debounced'`).Scan(&executions); err != nil {
		t.Fatal(err)
	}
	var from []string
	rows, err := c.pool.Query(ctx, `SELECT DISTINCT input->>'from' FROM trellis_runs WHERE workflow = 'debounced'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			t.Fatal(err)
		}
		from = append(from, f)
	}
	rows.Close()
	t.Logf("%d runs from %v: %d completed, %d superseded, %d executions", created, from, completed, superseded, executions)
	if len(from) != 2 {
		t.Errorf("the runs came from %v, want both workers", from)
	}
	if completed != 1 || executions != 1 || superseded != created-1 {
		t.Errorf("%d runs: %d completed, %d executions, %d superseded; want 1, 1 and %d", created, completed, executions, superseded, created-1)
	}
}
