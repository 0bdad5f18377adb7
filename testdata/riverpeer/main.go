// Command riverpeer measures River's no-op burn-down, the figure
// trellis bench's burn-downs are compared with: it inserts -jobs jobs
// that do nothing into a schema of its own, then starts one River client
// and times it from start until every job has completed. It is a module
// of its own so that River is a dependency of this benchmark only; `make
// bench-peers` runs it beside DBOS's peer and `trellis bench` on the same
// database.
//
//	go run . -database-url postgres://postgres@127.0.0.1:5432/test -jobs 100000
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noop is a job that does nothing.
type noop struct{}

func (noop) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noop]
}

func (noopWorker) Work(context.Context, *river.Job[noop]) error { return nil }

func main() {
	url := flag.String("database-url", envOr("TRELLIS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "Postgres connection `string`")
	jobs := flag.Int("jobs", 100_000, "no-op jobs to insert and work")
	// River's own benchmark (cmd/river/riverbench) tunes the client for
	// throughput with these; they are the defaults here, so that River is
	// measured at its best.
	workers := flag.Int("max-workers", 2_000, "jobs the client works at once (River's MaxWorkers)")
	cooldown := flag.Duration("fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown")
	poll := flag.Duration("fetch-poll-interval", 20*time.Millisecond, "River's FetchPollInterval")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := validate(*jobs, *workers, *cooldown, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "riverpeer:", err)
		os.Exit(2)
	}
	if err := run(ctx, os.Stdout, *url, *jobs, *workers, *cooldown, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "riverpeer:", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// validate reports settings the burn-down cannot run with, naming the flag.
func validate(jobs, workers int, cooldown, poll time.Duration) error {
	switch {
	case jobs < 1 || jobs > 10_000_000:
		return fmt.Errorf("-jobs %d: want 1 to 10,000,000", jobs)
	case workers < 1 || workers > 100_000:
		return fmt.Errorf("-max-workers %d: want 1 to 100,000", workers)
	case cooldown <= 0:
		return fmt.Errorf("-fetch-cooldown %v: want a positive duration", cooldown)
	case poll <= 0:
		return fmt.Errorf("-fetch-poll-interval %v: want a positive duration", poll)
	}
	return nil
}

// run burns down jobs no-op jobs in a schema of its own, which it drops
// afterwards, and writes its report to out.
func run(ctx context.Context, out io.Writer, url string, jobs, workers int, cooldown, poll time.Duration) (err error) {
	schema := fmt.Sprintf("riverpeer_%d", os.Getpid())
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return err
	}
	defer func() {
		_, dropErr := admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		err = errors.Join(err, dropErr)
	}()

	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}

	ws := river.NewWorkers()
	river.AddWorker(ws, &noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		FetchCooldown:     cooldown,
		FetchPollInterval: poll,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		Schema:            schema,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	t0 := time.Now()
	const batch = 10_000
	for from := 0; from < jobs; from += batch {
		params := make([]river.InsertManyParams, min(batch, jobs-from))
		for i := range params {
			params[i] = river.InsertManyParams{Args: noop{}}
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return fmt.Errorf("inserting: %w", err)
		}
	}
	inserted := time.Since(t0)
	if _, err := admin.Exec(ctx, "CHECKPOINT"); err != nil {
		return err
	}

	// A channel that holds every event: a full one drops them.
	completed, cancel := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: jobs})
	defer cancel()
	var walFrom string
	if err := admin.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&walFrom); err != nil {
		return err
	}
	cpuFrom, cpuOK := serverCPU()
	selfFrom := selfCPU()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return err
	}
	for done := 0; done < jobs; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-completed:
			done++
		}
	}
	elapsed := time.Since(start)
	cpuTo, cpuToOK := serverCPU()
	self := selfCPU() - selfFrom
	// The write-ahead log of the whole server while the jobs were worked,
	// as trellis bench measures its burn-downs.
	var wal int64
	if err := admin.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint`, walFrom).Scan(&wal); err != nil {
		return err
	}
	stopCtx, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelStop()
	if err := client.Stop(stopCtx); err != nil {
		return err
	}
	fmt.Fprintf(out, "RIVER  no-op burn-down, %d jobs inserted in %.2f s; one client, MaxWorkers %d, FetchCooldown %v, FetchPollInterval %v\n", jobs, inserted.Seconds(), workers, cooldown, poll)
	cpu := ""
	if cpuOK && cpuToOK {
		cpu = fmt.Sprintf(", %.0f µs of database CPU", float64((cpuTo-cpuFrom).Nanoseconds())/1e3/float64(jobs))
	}
	// River's own CPU (this process's), as trellis bench reports its
	// worker processes'.
	cpu += fmt.Sprintf(", %.0f µs of client CPU", float64(self.Nanoseconds())/1e3/float64(jobs))
	fmt.Fprintf(out, "  burn-down  %.0f jobs/s  %d jobs in %.2f s; %.0f B of WAL a job%s\n", float64(jobs)/elapsed.Seconds(), jobs, elapsed.Seconds(), float64(wal)/float64(jobs), cpu)
	return nil
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
