package pgstore_test

import (
	"context"
	"fmt"

	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// The multi-process tests run workers as separate OS processes (this test
// binary, re-executed with TRELLIS_WORKER_SCHEMA set) against one
// database, and kill them with SIGKILL. Steps log each execution to a
// table, so the tests check from the database what ran where and how often.

const (
	workerSchemaEnv = "TRELLIS_WORKER_SCHEMA"
	workerNameEnv   = "TRELLIS_WORKER_NAME"
	workerURLEnv    = "TRELLIS_WORKER_URL" // the database, when not pgtest.URL()
	// workerBurstEnv, when set (Unix nanoseconds), has the worker trigger a
	// burst of debounced runs at that time (see runlimit_multiproc_test.go).
	workerBurstEnv = "TRELLIS_WORKER_BURST_AT"
	// Worker timing: fast enough for tests, with heartbeats well inside
	// the stale limit.
	workerHeartbeat = 200 * time.Millisecond
	workerStale     = 2 * time.Second
	// workerScheduleRefresh is how soon workers read schedules the test
	// creates.
	workerScheduleRefresh = 200 * time.Millisecond
)

func TestMain(m *testing.M) {
	if schema := os.Getenv(workerSchemaEnv); schema != "" {
		url := os.Getenv(workerURLEnv)
		if url == "" {
			url = pgtest.URL()
		}
		os.Exit(workerMain(url, schema, os.Getenv(workerNameEnv)))
	}
	os.Exit(m.Run())
}

// workerMain is a worker process: it runs an engine with the multiproc
// workflows until SIGTERM (graceful) or SIGKILL.
func workerMain(url, schema, name string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pid", os.Getpid())
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		log.Error("config", "error", err)
		return 1
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = "trellis-worker-" + name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Error("pool", "error", err)
		return 1
	}
	defer pool.Close()
	// A worker named wide-... runs enough steps at once to record two
	// batches at a time (see Engine.recorders).
	concurrency := 16
	if strings.HasPrefix(name, "wide-") {
		concurrency = 500
	}
	// A worker named gpu-... has the label gpu=true (see
	// labels_multiproc_test.go); gpu-one-... runs one step at a time.
	var labels map[string]string
	if strings.HasPrefix(name, "gpu-") {
		labels = map[string]string{"gpu": "true"}
	}
	if strings.HasPrefix(name, "gpu-one-") {
		concurrency = 1
	}
	engine, err := runtime.New(runtime.Config{
		Store: pgstore.New(pool), WorkerID: name, Logger: log, Concurrency: concurrency,
		PollInterval: 200 * time.Millisecond, TimerInterval: 100 * time.Millisecond,
		HeartbeatInterval: workerHeartbeat, StaleAfter: workerStale,
		ScheduleRefresh: workerScheduleRefresh, Labels: labels,
	})
	if err != nil {
		log.Error("engine", "error", err)
		return 1
	}
	rec := &recorder{pool: pool, worker: name}
	if _, err := multiproc.RegisterFulfil(engine, &fulfilSteps{rec}); err != nil {
		log.Error("register", "error", err)
		return 1
	}
	if _, err := multiproc.RegisterPing(engine, &pingSteps{rec}); err != nil {
		log.Error("register", "error", err)
		return 1
	}
	if _, err := multiproc.RegisterChaos(engine, &chaosSteps{journal: &journal{pool: pool, worker: name}}); err != nil {
		log.Error("register", "error", err)
		return 1
	}
	if _, err := multiproc.RegisterLimited(engine, &limitedSteps{pool: pool, worker: name}); err != nil {
		log.Error("register", "error", err)
		return 1
	}
	if _, err := multiproc.RegisterSerial(engine, &serialSteps{pool: pool, worker: name}); err != nil {
		log.Error("register", "error", err)
		return 1
	}
	debounced, err := multiproc.RegisterDebounced(engine, &debouncedSteps{rec})
	if err != nil {
		log.Error("register", "error", err)
		return 1
	}
	if _, err := multiproc.RegisterPaced(engine, pacedSteps{}); err != nil {
		log.Error("register", "error", err)
		return 1
	}
	if _, err := multiproc.RegisterBulk(engine, &bulkSteps{rec}); err != nil {
		log.Error("register", "error", err)
		return 1
	}
	if _, err := multiproc.RegisterHostile(engine, hostileSteps{}); err != nil {
		log.Error("register", "error", err)
		return 1
	}
	if _, err := multiproc.RegisterRouted(engine, routedSteps{rec}); err != nil {
		log.Error("register", "error", err)
		return 1
	}
	if err := engine.Start(context.WithoutCancel(ctx)); err != nil {
		log.Error("start", "error", err)
		return 1
	}
	if at := os.Getenv(workerBurstEnv); at != "" {
		go triggerBurst(ctx, log, debounced, name, at)
	}
	<-ctx.Done()
	grace, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := engine.Stop(grace); err != nil {
		log.Error("stop", "error", err)
		return 1
	}
	return 0
}

// recorder logs step executions to the exec_log table.
type recorder struct {
	pool   *pgxpool.Pool
	worker string
}

func (r *recorder) record(ctx context.Context) error {
	info, _ := runtime.InfoFromContext(ctx)
	_, err := r.pool.Exec(ctx, `INSERT INTO exec_log (run_id, step, attempt, worker, pid) VALUES ($1, $2, $3, $4, $5)`,
		info.RunID, info.Step, info.Attempt, r.worker, os.Getpid())
	return err
}

type fulfilSteps struct{ rec *recorder }

func (s *fulfilSteps) Receive(ctx context.Context, _ multiproc.FulfilInput) error {
	return s.rec.record(ctx)
}

func (s *fulfilSteps) pick(ctx context.Context) error { return s.rec.record(ctx) }

func (s *fulfilSteps) Pick1(ctx context.Context, _ multiproc.FulfilInput, _ multiproc.FulfilPick1Parents) error {
	return s.pick(ctx)
}

func (s *fulfilSteps) Pick2(ctx context.Context, _ multiproc.FulfilInput, _ multiproc.FulfilPick2Parents) error {
	return s.pick(ctx)
}

// Pick3 blocks on the first attempt of a slow order until its process
// dies: the step a worker is killed in the middle of.
func (s *fulfilSteps) Pick3(ctx context.Context, in multiproc.FulfilInput, _ multiproc.FulfilPick3Parents) error {
	if err := s.pick(ctx); err != nil {
		return err
	}
	if info, _ := runtime.InfoFromContext(ctx); in.Slow != nil && *in.Slow && info.Retries == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *fulfilSteps) Pick4(ctx context.Context, _ multiproc.FulfilInput, _ multiproc.FulfilPick4Parents) error {
	return s.pick(ctx)
}

func (s *fulfilSteps) Pick5(ctx context.Context, _ multiproc.FulfilInput, _ multiproc.FulfilPick5Parents) error {
	return s.pick(ctx)
}

func (s *fulfilSteps) Pick6(ctx context.Context, _ multiproc.FulfilInput, _ multiproc.FulfilPick6Parents) error {
	return s.pick(ctx)
}

func (s *fulfilSteps) Pick7(ctx context.Context, _ multiproc.FulfilInput, _ multiproc.FulfilPick7Parents) error {
	return s.pick(ctx)
}

func (s *fulfilSteps) Pick8(ctx context.Context, _ multiproc.FulfilInput, _ multiproc.FulfilPick8Parents) error {
	return s.pick(ctx)
}

func (s *fulfilSteps) Pack(ctx context.Context, _ multiproc.FulfilInput, _ multiproc.FulfilPackParents) error {
	return s.rec.record(ctx)
}

func (s *fulfilSteps) Ship(ctx context.Context, _ multiproc.FulfilInput, _ multiproc.FulfilShipParents) error {
	return s.rec.record(ctx)
}

type pingSteps struct{ rec *recorder }

func (s *pingSteps) Pong(ctx context.Context, _ multiproc.PingInput) error { return s.rec.record(ctx) }

// cluster is a set of worker processes on one schema, and a client.
type cluster struct {
	t       *testing.T
	url     string
	schema  string
	pool    *pgxpool.Pool
	engine  *runtime.Engine
	fulfil  *multiproc.FulfilClient
	ping    *multiproc.PingClient
	chaos   *multiproc.ChaosClient
	limited *multiproc.LimitedClient
	serial  *multiproc.SerialClient
	paced   *multiproc.PacedClient
	bulk    *multiproc.BulkClient
	hostile *multiproc.HostileClient
	routed  *multiproc.RoutedClient
	workers map[string]*exec.Cmd
	logs    []string // log files of every worker started
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	return newClusterAt(t, pgtest.URL())
}

// newClusterAt is newCluster on the database at url.
func newClusterAt(t *testing.T, url string) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-process tests are skipped in -short mode")
	}
	pool, schema := pgtest.PoolWithSchemaAt(t, url)
	if _, err := pool.Exec(t.Context(), `CREATE TABLE exec_log (
		run_id uuid NOT NULL, step text NOT NULL, attempt int NOT NULL,
		worker text NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
		CREATE TABLE span_log (
		run_id uuid NOT NULL, step text NOT NULL, customer text NOT NULL, worker text NOT NULL,
		started_at timestamptz NOT NULL, ended_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	// The test process only triggers and waits; it executes nothing.
	engine, err := runtime.New(runtime.Config{Store: pgstore.New(pool), PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fulfil, err := multiproc.NewFulfilClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	ping, err := multiproc.NewPingClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	chaos, err := multiproc.NewChaosClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	limited, err := multiproc.NewLimitedClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := multiproc.NewSerialClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	paced, err := multiproc.NewPacedClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	bulk, err := multiproc.NewBulkClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	hostile, err := multiproc.NewHostileClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	routed, err := multiproc.NewRoutedClient(engine)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, url: url, schema: schema, pool: pool, engine: engine, fulfil: fulfil, ping: ping, chaos: chaos,
		limited: limited, serial: serial, paced: paced, bulk: bulk, hostile: hostile, routed: routed, workers: map[string]*exec.Cmd{}}
}

// start runs a worker process.
func (c *cluster) start(name string) {
	c.t.Helper()
	logPath := filepath.Join(c.t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerSchemaEnv+"="+c.schema, workerNameEnv+"="+name, workerURLEnv+"="+c.url)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.workers[name] = cmd
	c.logs = append(c.logs, logPath)
	c.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		logFile.Close()
		if c.t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				c.t.Logf("log of worker %s:\n%s", name, tail(string(b), 40))
			}
		}
	})
}

// kill9 kills a worker with SIGKILL: no drain, no goodbye.
func (c *cluster) kill9(name string) {
	c.t.Helper()
	cmd := c.workers[name]
	if err := cmd.Process.Kill(); err != nil {
		c.t.Fatal(err)
	}
	_ = cmd.Wait()
}

// workerByPid names the worker with the given process id.
func (c *cluster) workerByPid(pid int) string {
	for name, cmd := range c.workers {
		if cmd.Process.Pid == pid {
			return name
		}
	}
	return ""
}

// leader names the worker whose leadership connection holds the advisory
// lock.
func (c *cluster) leader() string {
	var app string
	err := c.pool.QueryRow(c.t.Context(), `
		SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE 'trellis-worker-%'
		  AND l.objid = (hashtextextended($1 || '.trellis.leader', 0) & 4294967295)::oid`, c.schema).Scan(&app)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(app, "trellis-worker-")
}

// waitDone waits until every run has completed.
func (c *cluster) waitDone(ids []runtime.RunID, within time.Duration) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), within)
	defer cancel()
	for _, id := range ids {
		res, err := c.engine.Wait(ctx, id)
		if err != nil || res.Status != runtime.RunCompleted {
			c.t.Fatalf("run %s: %v (%v)", id, err, res)
		}
	}
}

// executions counts executions per run and step.
func (c *cluster) executions() map[string]int {
	c.t.Helper()
	rows, err := c.pool.Query(c.t.Context(), `SELECT run_id::text || '/' || step, count(*) FROM exec_log GROUP BY 1`)
	if err != nil {
		c.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			c.t.Fatal(err)
		}
		out[k] = n
	}
	return out
}

var fulfilCodeSteps = []string{"receive", "pick-1", "pick-2", "pick-3", "pick-4", "pick-5", "pick-6", "pick-7", "pick-8", "pack", "ship"}

func (c *cluster) triggerFulfil(n int, slow func(i int) bool) []runtime.RunID {
	c.t.Helper()
	ids := make([]runtime.RunID, n)
	for i := range ids {
		s := slow != nil && slow(i)
		ref, err := c.fulfil.RunNoWait(c.t.Context(), multiproc.FulfilInput{Order: int64(i), Slow: &s},
			runtime.WithTenant(fmt.Sprintf("shop-%d", i%4)))
		if err != nil {
			c.t.Fatal(err)
		}
		ids[i] = ref.ID
	}
	return ids
}

func TestWorkersExecuteEachStepExactlyOnce(t *testing.T) {
	c := newCluster(t)
	for i := range 2 {
		c.start(fmt.Sprintf("w%d", i))
	}
	c.start("wide-w2")
	ids := c.triggerFulfil(300, nil)
	c.waitDone(ids, 2*time.Minute)
	counts := c.executions()
	workers := map[string]bool{}
	for _, id := range ids {
		for _, step := range fulfilCodeSteps {
			if n := counts[id.String()+"/"+step]; n != 1 {
				t.Errorf("run %s step %s executed %d times, want exactly once", id, step, n)
			}
		}
	}
	rows, err := c.pool.Query(t.Context(), `SELECT DISTINCT worker FROM exec_log`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var w string
		_ = rows.Scan(&w)
		workers[w] = true
	}
	rows.Close()
	t.Logf("300 runs x %d code steps executed by %d workers", len(fulfilCodeSteps), len(workers))
	if len(workers) < 2 {
		t.Errorf("only %d worker(s) did any work", len(workers))
	}
}

func TestKilledWorkersTaskRunsElsewhere(t *testing.T) {
	c := newCluster(t)
	for i := range 3 {
		c.start(fmt.Sprintf("w%d", i))
	}
	ids := c.triggerFulfil(20, func(i int) bool { return i == 7 })
	slowRun := ids[7]
	// Wait until a worker is inside the slow step, then kill it.
	var pid int
	eventually(t, "the slow step starts", func() bool {
		err := c.pool.QueryRow(t.Context(), `SELECT pid FROM exec_log WHERE run_id = $1 AND step = 'pick-3'`, slowRun).Scan(&pid)
		return err == nil
	})
	victim := c.workerByPid(pid)
	if victim == "" {
		t.Fatalf("no worker has pid %d", pid)
	}
	c.kill9(victim)
	c.waitDone(ids, 2*time.Minute)
	var attempts []int
	var pids []int
	rows, err := c.pool.Query(t.Context(), `SELECT attempt, pid FROM exec_log WHERE run_id = $1 AND step = 'pick-3' ORDER BY at`, slowRun)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a, p int
		_ = rows.Scan(&a, &p)
		attempts, pids = append(attempts, a), append(pids, p)
	}
	rows.Close()
	if len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 || pids[1] == pid {
		t.Errorf("pick-3 of the slow run: attempts %v on pids %v (killed %d); want attempt 2 on another worker", attempts, pids, pid)
	}
	// Every step of every run ran at least once; steps that were not on the
	// killed worker ran exactly once.
	counts := c.executions()
	for _, id := range ids {
		for _, step := range fulfilCodeSteps {
			if n := counts[id.String()+"/"+step]; n < 1 {
				t.Errorf("run %s step %s never ran", id, step)
			}
		}
	}
	events, err := c.engine.Events(t.Context(), slowRun)
	if err != nil {
		t.Fatal(err)
	}
	recovered := false
	for _, ev := range events {
		if ev.Step == "pick-3" && ev.Type == "RETRYING" && strings.Contains(ev.Detail, "worker "+victim+" stopped heartbeating") {
			recovered = true
		}
	}
	if !recovered {
		t.Errorf("no RETRYING event names the dead worker: %+v", events)
	}
}

func TestSleepingRunWakesAfterLeaderIsKilled(t *testing.T) {
	c := newCluster(t)
	c.start("w0")
	c.start("w1")
	var leader string
	eventually(t, "a worker leads", func() bool { leader = c.leader(); return leader != "" })
	ids := c.triggerFulfil(10, nil)
	// Once every run sleeps in its cool-off, kill the leader.
	eventually(t, "all runs sleep", func() bool {
		var n int
		err := c.pool.QueryRow(t.Context(), `SELECT count(*) FROM trellis_tasks
			WHERE run_id = ANY ($1) AND step = 10 AND status = 'SLEEPING'`, ids).Scan(&n)
		return err == nil && n == len(ids)
	})
	c.kill9(leader)
	c.waitDone(ids, time.Minute)
	if now := c.leader(); now == "" || now == leader {
		t.Errorf("leader after the kill = %q (before: %q)", now, leader)
	}
}

func TestFairnessBetweenTwoTenants(t *testing.T) {
	c := newCluster(t)
	// Tenant B queues a backlog of single-task runs while no worker runs.
	const backlog = 2000
	for range backlog {
		if _, err := c.ping.RunNoWait(t.Context(), multiproc.PingInput{}, runtime.WithTenant("B")); err != nil {
			t.Fatal(err)
		}
	}
	c.start("w0")
	c.start("w1")
	eventually(t, "B's backlog is being worked on", func() bool {
		var n int
		_ = c.pool.QueryRow(t.Context(), `SELECT count(*) FROM exec_log`).Scan(&n)
		return n >= 100
	})
	ref, err := c.ping.RunNoWait(t.Context(), multiproc.PingInput{}, runtime.WithTenant("A"))
	if err != nil {
		t.Fatal(err)
	}
	// A's task is visible to claims from here on. (Its QUEUED event is
	// stamped before the insert, which may wait for a connection under
	// load: claims in between could not have taken it.)
	visible := time.Now()
	c.waitDone([]runtime.RunID{ref.ID}, time.Minute)
	// How many tasks, and how many claims (a worker's tasks started at one
	// instant), started between A's task becoming visible and it starting?
	var tasks, claims int
	err = c.pool.QueryRow(t.Context(), `
		WITH a AS (
			SELECT min(at) FILTER (WHERE type = 'STARTED') AS started
			FROM trellis_event_log WHERE run_id = $1
		)
		SELECT count(*), count(DISTINCT (t.worker, e.at))
		FROM trellis_event_log e JOIN trellis_tasks t ON t.run_id = e.run_id AND t.step = e.step, a
		WHERE e.type = 'STARTED' AND e.run_id <> $1 AND e.at > $2 AND e.at < a.started`, ref.ID, visible).Scan(&tasks, &claims)
	if err != nil {
		t.Fatal(err)
	}
	remaining := 0
	_ = c.pool.QueryRow(t.Context(), `SELECT count(*) FROM trellis_ready`).Scan(&remaining)
	t.Logf("with %d of B's %d tasks still queued, A's task started after %d other tasks in %d claims", remaining, backlog, tasks, claims)
	if claims > 4 {
		t.Errorf("A's task waited %d claims behind B's backlog; want at most a couple per worker", claims)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
