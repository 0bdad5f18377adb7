package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// History is what a large history of finished runs costs the workers: a
// diamond-6 burn-down of o.Runs runs with one worker process on an empty
// schema, then o.HistoryRuns finished runs (6 tasks and 18 events each)
// inserted, vacuumed and analyzed, then the same burn-down twice more.
// The runs of the first burn-down after the history are a burst the
// statistics do not know (they were gathered while nothing ran); those
// of the second came after the leader's maintenance had its chance. The
// leader keeps every run, so the history stays.
type History struct {
	HistoryRuns   int           `json:"history_runs"`
	HistoryInsert time.Duration `json:"history_insert_ns"`
	// TableBytes is the size of the schema's tables, indexes included,
	// with the history in.
	TableBytes  int64        `json:"table_bytes"`
	Empty       Throughput   `json:"empty"`
	WithHistory []Throughput `json:"with_history"`
	// Ratio is the slower burn-down with the history over the one
	// without.
	Ratio float64 `json:"ratio"`
	// ClaimMs is the server's mean execution time of a claim statement
	// in each burn-down (Empty, then WithHistory), read from
	// pg_stat_statements when the server has it; nil otherwise.
	ClaimMs []float64 `json:"claim_ms,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
}

// RunHistory runs the history scenario.
func RunHistory(ctx context.Context, o Options) (res History, err error) {
	sh := diamondShape()
	log := o.logger().With("scenario", "history", "history", o.HistoryRuns, "runs", o.Runs)
	c, err := newPGCase(ctx, o, log)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, c.close(ctx)) }()
	res.HistoryRuns = o.HistoryRuns
	stats := newStatementStats(ctx, c.db.pool)
	if !stats.ok {
		res.Notes = append(res.Notes, "no pg_stat_statements on the server: claim times not measured")
	}
	burn := func(what string) (Throughput, error) {
		before := stats.claims(ctx)
		t, err := purgeBurnDown(ctx, c, sh, nil)
		if err != nil {
			return t, fmt.Errorf("burn-down %s: %w", what, err)
		}
		if stats.ok {
			res.ClaimMs = append(res.ClaimMs, stats.claims(ctx).meanSince(before))
		}
		log.Info("burn-down", "case", what, "tasks/s", int(t.TasksPerSec))
		return t, nil
	}
	if res.Empty, err = burn("on an empty schema"); err != nil {
		return res, err
	}
	log.Info("inserting the history")
	t0 := time.Now()
	if err := insertHistory(ctx, c.db.pool, c.workflow(sh), o.HistoryRuns); err != nil {
		return res, err
	}
	res.HistoryInsert = time.Since(t0)
	if res.TableBytes, err = tableBytes(ctx, c.db.pool); err != nil {
		return res, err
	}
	for _, what := range []string{"with the history, a burst the statistics do not know", "with the history, again"} {
		t, err := burn(what)
		if err != nil {
			return res, err
		}
		res.WithHistory = append(res.WithHistory, t)
	}
	slowest := res.WithHistory[0].TasksPerSec
	for _, t := range res.WithHistory[1:] {
		slowest = min(slowest, t.TasksPerSec)
	}
	res.Ratio = slowest / res.Empty.TasksPerSec
	return res, nil
}

// statementStats reads the claim statements' totals from
// pg_stat_statements, when the server has it, across every schema (the
// bench's cases run one at a time).
type statementStats struct {
	pool  *pgxpool.Pool
	query string
	ok    bool
}

type statementTotals struct {
	calls int64
	ms    float64
}

func newStatementStats(ctx context.Context, pool *pgxpool.Pool) *statementStats {
	s := &statementStats{pool: pool}
	var schema string
	if err := pool.QueryRow(ctx, `SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_stat_statements'`).Scan(&schema); err != nil {
		return s
	}
	s.query = `SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(total_exec_time), 0)::float8 FROM ` + schema +
		`.pg_stat_statements WHERE query LIKE '-- name: ReadyClaim %'`
	_, s.ok = s.read(ctx)
	return s
}

func (s *statementStats) read(ctx context.Context) (statementTotals, bool) {
	var t statementTotals
	err := s.pool.QueryRow(ctx, s.query).Scan(&t.calls, &t.ms)
	return t, err == nil
}

func (s *statementStats) claims(ctx context.Context) statementTotals {
	if !s.ok {
		return statementTotals{}
	}
	t, _ := s.read(ctx)
	return t
}

// meanSince is the mean time of the calls since before.
func (t statementTotals) meanSince(before statementTotals) float64 {
	if t.calls <= before.calls {
		return 0
	}
	return (t.ms - before.ms) / float64(t.calls-before.calls)
}
