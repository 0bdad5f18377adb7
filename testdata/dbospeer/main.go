// Command dbospeer measures DBOS Transact Go's burn-down of the shapes
// trellis bench burns down: chain-5 (five steps in a line) and diamond-6
// (1 → 4 → 1, the four middle steps at once with dbos.Go), as durable
// workflows whose no-op steps are checkpointed (dbos.RunAsStep). It
// enqueues -workflows workflows on a DBOS queue in a schema of its own,
// then launches one DBOS process whose queue runs -concurrency workflows
// at once, and times it from launch until every workflow has succeeded.
// It is a module of its own so that DBOS is a dependency of this
// benchmark only; `make bench-peers` runs it beside River's peer and
// `trellis bench` on the same database.
//
// DBOS's queue polls for work every second by default, which caps a
// process near -concurrency workflows a second; -poll sets the interval
// (2 ms by default here, DBOS's most favourable setting on one machine).
//
//	go run . -database-url postgres://postgres@127.0.0.1:5432/test -workflows 20000 -concurrency 100
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"
)

// The shapes, named as trellis bench names its burn-downs.
const (
	chainLabel   = "chain-5"
	diamondLabel = "diamond-6"
)

// queueName is the DBOS queue the workflows are enqueued on.
const queueName = "burndown"

// dbosDefaultPoll is DBOS's default queue polling interval, for the output.
const dbosDefaultPoll = time.Second

// config is one measurement's settings.
type config struct {
	url         string
	workflows   int
	concurrency int
	poll        time.Duration
	maxConns    int           // the DBOS pool's connections; 0: DBOS's default (20)
	stall       time.Duration // fail when no workflow finishes for this long
}

// result is one burn-down's figures.
type result struct {
	shape       string
	schema      string // the schema it ran in, dropped at its end
	workflows   int
	steps       int
	enqueued    time.Duration // enqueueing the workflows, before launch
	elapsed     time.Duration // from launch to the last workflow's completion
	wal         int64         // bytes of write-ahead log while the workflows ran
	dbCPU       time.Duration // the postgres processes' CPU while they ran; -1: unknown
	clientCPU   time.Duration // this process's CPU while they ran
	checkpoints int           // step outputs DBOS recorded
	logged      []string      // DBOS's warnings and errors
}

func main() {
	var c config
	flag.StringVar(&c.url, "database-url", envOr("TRELLIS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "Postgres connection `string`")
	flag.IntVar(&c.workflows, "workflows", 20_000, "workflows to enqueue and work, per shape")
	flag.IntVar(&c.concurrency, "concurrency", 100, "workflows the process runs at once (the queue's worker concurrency)")
	flag.DurationVar(&c.poll, "poll", 2*time.Millisecond, "the queue's polling interval (DBOS's default: 1s)")
	flag.IntVar(&c.maxConns, "max-conns", 0, "connections in DBOS's pool (0: DBOS's default, 20)")
	flag.DurationVar(&c.stall, "stall", 2*time.Minute, "fail when no workflow finishes for this long")
	shapes := flag.String("shapes", chainLabel+","+diamondLabel, "comma-separated shapes to burn down: "+chainLabel+", "+diamondLabel)
	flag.Parse()
	if err := c.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "dbospeer:", err)
		os.Exit(2)
	}
	if err := run(c, strings.Split(*shapes, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "dbospeer:", err)
		os.Exit(1)
	}
}

// run burns down each shape in turn and reports it.
func run(c config, shapes []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, shape := range shapes {
		res, err := burnDown(ctx, c, strings.TrimSpace(shape))
		if err != nil {
			return err
		}
		report(os.Stdout, c, res)
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (c config) validate() error {
	switch {
	case c.workflows < 1 || c.workflows > 10_000_000:
		return fmt.Errorf("-workflows %d: want 1 to 10,000,000", c.workflows)
	case c.concurrency < 1 || c.concurrency > 100_000:
		return fmt.Errorf("-concurrency %d: want 1 to 100,000", c.concurrency)
	case c.poll <= 0 || c.poll > time.Minute:
		return fmt.Errorf("-poll %v: want more than 0 and at most 1m", c.poll)
	case c.maxConns < 0 || c.maxConns > 10_000:
		return fmt.Errorf("-max-conns %d: want 0 (DBOS's default) to 10,000", c.maxConns)
	case c.stall <= 0:
		return fmt.Errorf("-stall %v: want more than 0", c.stall)
	}
	return nil
}

// report prints a burn-down's figures.
func report(w io.Writer, c config, r result) {
	conns := "DBOS's default pool (20 connections)"
	if c.maxConns > 0 {
		conns = fmt.Sprintf("a pool of %d connections", c.maxConns)
	}
	fmt.Fprintf(w, "DBOS   %s burn-down, %d workflows enqueued in %.2f s; one process, worker concurrency %d, queue poll %v (DBOS's default %v), %s\n",
		r.shape, r.workflows, r.enqueued.Seconds(), c.concurrency, c.poll, dbosDefaultPoll, conns)
	cpu := ""
	if r.dbCPU >= 0 {
		cpu = fmt.Sprintf(", %.0f µs of database CPU", perStep(r.dbCPU, r.steps))
	}
	cpu += fmt.Sprintf(", %.0f µs of client CPU", perStep(r.clientCPU, r.steps))
	fmt.Fprintf(w, "  burn-down  %.0f steps/s  %.0f workflows/s  %d steps in %.2f s; %.0f B of WAL a step%s\n",
		float64(r.steps)/r.elapsed.Seconds(), float64(r.workflows)/r.elapsed.Seconds(), r.steps, r.elapsed.Seconds(),
		float64(r.wal)/float64(r.steps), cpu)
	if len(r.logged) > 0 {
		fmt.Fprintf(w, "  DBOS logged %d warnings and errors while it ran; the first:\n", len(r.logged))
		for _, l := range r.logged[:min(len(r.logged), 5)] {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}

func perStep(d time.Duration, steps int) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(steps)
}

// finished counts the workflows of the running burn-down that returned
// (the shapes are top-level functions, as DBOS asks workflows to be).
var finished atomic.Int64

func noop(context.Context) (int, error) { return 0, nil }

// chain5 is five steps in a line.
func chain5(ctx dbos.Context, _ int) (int, error) {
	defer finished.Add(1)
	for _, name := range []string{"s1", "s2", "s3", "s4", "s5"} {
		if _, err := dbos.RunAsStep(ctx, noop, dbos.WithStepName(name)); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// diamond6 is one step, then four at once, then one.
func diamond6(ctx dbos.Context, _ int) (int, error) {
	defer finished.Add(1)
	if _, err := dbos.RunAsStep(ctx, noop, dbos.WithStepName("top")); err != nil {
		return 0, err
	}
	var middle [4]<-chan dbos.StepOutcome[int]
	for i := range middle {
		ch, err := dbos.Go(ctx, noop, dbos.WithStepName("middle"+strconv.Itoa(i+1)))
		if err != nil {
			return 0, err
		}
		middle[i] = ch
	}
	var errs []error
	for _, ch := range middle {
		if o := <-ch; o.Err != nil {
			errs = append(errs, o.Err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	_, err := dbos.RunAsStep(ctx, noop, dbos.WithStepName("bottom"))
	return 0, err
}

// burnDown enqueues c.workflows workflows of a shape in a schema of its
// own, launches DBOS and waits until all have succeeded; it drops the
// schema whatever happens.
func burnDown(ctx context.Context, c config, shape string) (res result, err error) {
	res = result{shape: shape, workflows: c.workflows}
	var wf dbos.Workflow[int, int]
	switch shape {
	case chainLabel:
		wf, res.steps = chain5, 5*c.workflows
	case diamondLabel:
		wf, res.steps = diamond6, 6*c.workflows
	default:
		return res, fmt.Errorf("no shape %.40q (use %s or %s)", shape, chainLabel, diamondLabel)
	}
	finished.Store(0)

	admin, err := pgxpool.New(ctx, c.url)
	if err != nil {
		return res, err
	}
	defer admin.Close()
	// A name no other run has: DBOS would take over a schema left behind.
	schema := fmt.Sprintf("dbospeer_%d_%d", os.Getpid(), time.Now().UnixNano())
	res.schema = schema
	// DBOS creates its schema; drop it, and all it holds, at the end.
	defer func() {
		_, dropErr := admin.Exec(context.WithoutCancel(ctx), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		err = errors.Join(err, dropErr)
	}()

	logs := &logCapture{}
	dbosURL, err := withMaxConns(c.url, c.maxConns)
	if err != nil {
		return res, err
	}
	dctx, err := dbos.NewContext(ctx, dbos.Config{
		AppName:        "dbospeer",
		DatabaseURL:    dbosURL,
		DatabaseSchema: schema,
		Logger:         slog.New(logs),
	})
	if err != nil {
		return res, fmt.Errorf("starting DBOS: %w", err)
	}
	launched := false
	defer func() {
		// Shutdown cancels what still runs; after a complete burn-down
		// nothing does.
		if shutErr := dbos.Shutdown(dctx, 10*time.Second); shutErr != nil && launched {
			err = errors.Join(err, fmt.Errorf("shutting DBOS down: %w", shutErr))
		}
	}()
	dbos.RegisterWorkflow(dctx, wf, dbos.WithWorkflowName(shape))
	if _, err := dbos.RegisterQueue(dctx, queueName,
		dbos.WithWorkerConcurrency(c.concurrency),
		dbos.WithQueueBasePollingInterval(c.poll)); err != nil {
		return res, fmt.Errorf("registering the queue: %w", err)
	}

	t0 := time.Now()
	if err := enqueue(ctx, dctx, admin, shape, c.workflows); err != nil {
		return res, err
	}
	res.enqueued = time.Since(t0)

	walFrom, err := walPosition(ctx, admin)
	if err != nil {
		return res, err
	}
	cpuFrom, cpuOK := serverCPU()
	selfFrom := selfCPU()
	start := time.Now()
	if err := dbos.Launch(dctx); err != nil {
		return res, fmt.Errorf("launching DBOS: %w", err)
	}
	launched = true
	if err := waitFinished(ctx, admin, schema, c.workflows, c.stall, logs); err != nil {
		return res, err
	}
	res.elapsed = time.Since(start)
	cpuTo, cpuToOK := serverCPU()
	res.clientCPU = selfCPU() - selfFrom
	res.dbCPU = -1
	if cpuOK && cpuToOK {
		res.dbCPU = cpuTo - cpuFrom
	}
	// The write-ahead log of the whole server while the workflows ran,
	// as trellis bench measures its burn-downs.
	if res.wal, err = walSince(ctx, admin, walFrom); err != nil {
		return res, err
	}
	// Every step must have been checkpointed, once.
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "operation_outputs"}.Sanitize()).Scan(&res.checkpoints); err != nil {
		return res, fmt.Errorf("counting step outputs: %w", err)
	}
	if res.checkpoints != res.steps {
		return res, fmt.Errorf("%s: %d step outputs recorded for %d steps", shape, res.checkpoints, res.steps)
	}
	res.logged = logs.lines()
	return res, nil
}

// withMaxConns sets pool_max_conns in a connection URL, which DBOS's pool
// honours; 0 leaves the URL as it is.
func withMaxConns(raw string, n int) (string, error) {
	if n == 0 {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "", errors.New("-max-conns needs a postgres:// URL for -database-url")
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// enqueueBatch is how many workflows one transaction enqueues.
const enqueueBatch = 500

// enqueue puts n workflows of a shape on the queue, in transactions of
// enqueueBatch, four at once; none runs, as DBOS is not launched.
func enqueue(ctx context.Context, dctx dbos.Context, pool *pgxpool.Pool, shape string, n int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for from := 0; from < n; from += enqueueBatch {
		count := min(enqueueBatch, n-from)
		g.Go(func() error {
			tx, err := pool.Begin(gctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(context.WithoutCancel(gctx)) }()
			for i := range count {
				if _, err := dbos.Enqueue[int](dctx, queueName, shape, from+i, dbos.WithEnqueueTransaction(tx)); err != nil {
					return fmt.Errorf("enqueueing: %w", err)
				}
			}
			return tx.Commit(gctx)
		})
	}
	return g.Wait()
}

// waitFinished waits until n workflows have returned, then until the
// schema's workflow_status says all n succeeded (DBOS records a
// workflow's outcome after it returns). It fails when a workflow ends
// otherwise, or when none returns for stall.
func waitFinished(ctx context.Context, pool *pgxpool.Pool, schema string, n int, stall time.Duration, logs *logCapture) error {
	last, lastMoved := int64(-1), time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for finished.Load() < int64(n) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if f := finished.Load(); f != last {
			last, lastMoved = f, time.Now()
		} else if time.Since(lastMoved) > stall {
			return fmt.Errorf("no workflow finished for %v (%d of %d did)%s", stall, f, n, logs.summary())
		}
	}
	query := "SELECT count(*) FILTER (WHERE status = 'SUCCESS'), count(*) FILTER (WHERE status NOT IN ('SUCCESS', 'ENQUEUED', 'PENDING')) FROM " +
		pgx.Identifier{schema, "workflow_status"}.Sanitize()
	deadline := time.Now().Add(stall)
	for {
		var succeeded, failed int
		if err := pool.QueryRow(ctx, query).Scan(&succeeded, &failed); err != nil {
			return fmt.Errorf("counting finished workflows: %w", err)
		}
		switch {
		case failed > 0:
			return fmt.Errorf("%d workflows did not succeed%s", failed, logs.summary())
		case succeeded == n:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d workflows succeeded %v after all returned%s", succeeded, n, stall, logs.summary())
		}
		time.Sleep(time.Millisecond)
	}
}

// walPosition returns the server's current write-ahead log position.
func walPosition(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var lsn string
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return "", fmt.Errorf("reading the WAL position: %w", err)
	}
	return lsn, nil
}

// walSince returns the bytes of write-ahead log written since from.
func walSince(ctx context.Context, pool *pgxpool.Pool, from string) (int64, error) {
	var n int64
	if err := pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint`, from).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading the WAL position: %w", err)
	}
	return n, nil
}

// logCapture is a slog handler that keeps DBOS's warnings and errors
// (the first maxLogged of them) and drops the rest.
type logCapture struct {
	mu     sync.Mutex
	count  int
	first  []string
	attrs  []slog.Attr
	parent *logCapture // handlers made by WithAttrs share their root's lines
}

const maxLogged = 20

func (l *logCapture) root() *logCapture {
	for l.parent != nil {
		l = l.parent
	}
	return l
}

func (l *logCapture) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn
}

func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	for _, a := range l.attrs {
		fmt.Fprintf(&b, " %s", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s", a)
		return true
	})
	line := b.String()
	if len(line) > 500 {
		line = line[:500] + "…"
	}
	root := l.root()
	root.mu.Lock()
	defer root.mu.Unlock()
	root.count++
	if len(root.first) < maxLogged {
		root.first = append(root.first, line)
	}
	return nil
}

func (l *logCapture) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logCapture{attrs: append(append([]slog.Attr(nil), l.attrs...), attrs...), parent: l.root()}
}

func (l *logCapture) WithGroup(string) slog.Handler { return l }

// lines returns the kept lines, with a count of those dropped.
func (l *logCapture) lines() []string {
	root := l.root()
	root.mu.Lock()
	defer root.mu.Unlock()
	out := append([]string(nil), root.first...)
	if root.count > len(root.first) {
		out = append(out, fmt.Sprintf("(and %d more)", root.count-len(root.first)))
	}
	return out
}

// summary is the kept lines for an error message.
func (l *logCapture) summary() string {
	lines := l.lines()
	if len(lines) == 0 {
		return ""
	}
	return "; DBOS logged:\n  " + strings.Join(lines, "\n  ")
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU returns the CPU time the PostgreSQL processes on this machine
// have used so far, as trellis bench reads it (its dbcpu.go): every
// process named postgres, with its reaped children's; ok is false when
// there is none.
func serverCPU() (cpu time.Duration, ok bool) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, false
	}
	var ticks int64
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open || string(b[open+1:end]) != "postgres" {
			continue
		}
		fields := bytes.Fields(b[end+1:])
		if len(fields) < 15 {
			return 0, false
		}
		for _, f := range fields[11:15] { // utime, stime, cutime, cstime
			n, err := strconv.ParseInt(string(f), 10, 64)
			if err != nil {
				return 0, false
			}
			ticks += n
		}
		ok = true
	}
	return time.Duration(ticks) * 10 * time.Millisecond, ok // USER_HZ is 100
}
