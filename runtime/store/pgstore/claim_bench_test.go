package pgstore_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// BenchmarkClaimTasks times ClaimTasks alone, taking 100 tasks at a time,
// with and without a tenant limit. Around each claim, untimed: 100 new
// runs keep a backlog of 2,000 queued tasks of 10 tenants, the claimed
// tasks complete, the queue is vacuumed and analyzed every 10 claims, and 500 other
// tasks stay running throughout (the leases a tenant limit counts).
//
// It also reports replans/op, the share of claims for which Postgres
// planned the statement afresh rather than reusing its generic plan
// (a replan costs about half a millisecond of server CPU), and, with a
// local server on Linux, pg-cpu-ms/op: the CPU time the server spent on
// each claim, read from /proc, which on a busy machine is much steadier
// than the time per claim.
func BenchmarkClaimTasks(b *testing.B) {
	for _, tenantLimit := range []int{0, 100} {
		b.Run(fmt.Sprintf("tenant-limit=%d", tenantLimit), func(b *testing.B) {
			benchmarkClaim(b, tenantLimit)
		})
	}
}

func benchmarkClaim(b *testing.B, tenantLimit int) {
	const (
		batch   = 100
		backlog = 2000
		running = 500
		tenants = 10
	)
	ctx := b.Context()
	pool, backend := onePool(b)
	s := pgstore.New(pool)
	now := time.Now()
	n := 0
	create := func(count int) {
		runs := make([]store.NewRun, count)
		for i := range runs {
			runs[i] = store.NewRun{
				ID: uuid.Must(uuid.NewV7()), Workflow: "w", Version: "w@1", Tenant: fmt.Sprintf("tenant-%d", n%tenants),
				Input: []byte(`{}`), Tasks: []store.NewTask{{Step: 0, Kind: store.KindCode, Plain: true, MaxAttempts: 1}},
			}
			n++
		}
		if _, err := s.CreateRuns(ctx, store.CreateRuns{Runs: runs, Now: now}); err != nil {
			b.Fatal(err)
		}
	}
	create(running + backlog)
	if got, err := s.ClaimTasks(ctx, store.Claim{Worker: "held", Limit: running, Now: now}); err != nil || len(got) != running {
		b.Fatalf("claiming the running tasks: %d, %v", len(got), err)
	}
	claim := store.Claim{Worker: "bench", Limit: batch, TenantLimit: tenantLimit, Now: now}
	var cpu time.Duration
	cpuKnown := true
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		create(batch)
		if i%10 == 0 {
			// Every claim leaves dead queue entries in front of the next; and
			// statistics as autovacuum would keep them.
			if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) trellis_ready, trellis_leases`); err != nil {
				b.Fatal(err)
			}
		}
		before, ok := cpuTime(backend)
		b.StartTimer()
		got, err := s.ClaimTasks(ctx, claim)
		b.StopTimer()
		after, ok2 := cpuTime(backend)
		cpu += after - before
		cpuKnown = cpuKnown && ok && ok2
		if err != nil || len(got) != batch {
			b.Fatalf("claimed %d tasks, %v; want %d", len(got), err, batch)
		}
		r := store.Results{Now: now}
		for _, c := range got {
			r.Completions = append(r.Completions, store.Completion{Attempt: store.Attempt{Key: c.Key, Attempt: c.Attempt}, Output: []byte(`{}`)})
		}
		if _, err := s.Finish(ctx, r); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	var replans float64
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(custom_plans), 0)::float8 FROM pg_prepared_statements
		WHERE statement LIKE '-- name: ReadyClaim%'`).Scan(&replans); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(replans/float64(b.N+1), "replans/op")
	if cpuKnown {
		b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "pg-cpu-ms/op")
	}
}

// onePool returns a pool of one connection on a schema of its own, so
// that every statement runs in the backend whose CPU cpuTime reads, and
// that backend's process id.
func onePool(b *testing.B) (*pgxpool.Pool, int) {
	_, schema := pgtest.PoolWithSchema(b)
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	var backend int
	if err := pool.QueryRow(b.Context(), `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		b.Fatal(err)
	}
	return pool, backend
}

// cpuTime is the CPU time a local Postgres process has used, from the
// first field of /proc/<pid>/schedstat (nanoseconds on a CPU); false where
// there is no such process (not Linux, or the server is elsewhere).
func cpuTime(pid int) (time.Duration, bool) {
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err != nil || !strings.HasPrefix(string(comm), "postgres") {
		return 0, false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, false
	}
	ns, err := strconv.ParseInt(fields[0], 10, 64)
	return time.Duration(ns), err == nil
}
