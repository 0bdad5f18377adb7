package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
)

// Fairness holds both fairness cases.
type Fairness struct {
	Lone   LoneTenant    `json:"lone_tenant"`
	Shared SharedBacklog `json:"shared_backlog"`
}

// LoneTenant is the case where tenant A triggers one run while tenant B's
// backlog is being worked on: how much of B's work went ahead of A's task.
type LoneTenant struct {
	// Backlog is B's backlog of single-step runs; Workers worked on it.
	Backlog int `json:"backlog"`
	Workers int `json:"workers"`
	// Waiting is how many of B's tasks had not started when A's was
	// queued.
	Waiting int `json:"waiting"`
	// TasksAhead is how many other tasks started after A's task was
	// QUEUED and before it STARTED.
	TasksAhead int `json:"tasks_ahead"`
	// ClaimsAhead is how many claims (the tasks one worker started at one
	// instant) started in that interval.
	ClaimsAhead int `json:"claims_ahead"`
	// ClaimedWith is how many other tasks the claim that started A's task
	// started with it.
	ClaimedWith int `json:"claimed_with"`
	// Wait is A's task's time from QUEUED to STARTED.
	Wait  time.Duration `json:"wait_ns"`
	Notes []string      `json:"notes,omitempty"`
}

// SharedBacklog is the case where several tenants insert the same backlog
// and workers burn it down: each tenant's share of the first half.
type SharedBacklog struct {
	Tenants       int `json:"tenants"`
	RunsPerTenant int `json:"runs_per_tenant"`
	Workers       int `json:"workers"`
	// Elapsed is the whole burn-down; the shares count the tasks
	// COMPLETED in its first half (FirstHalf of them).
	Elapsed   time.Duration `json:"elapsed_ns"`
	FirstHalf int           `json:"first_half"`
	Shares    []TenantShare `json:"shares"`
	Notes     []string      `json:"notes,omitempty"`
}

// TenantShare is one tenant's part of the tasks completed in the first
// half of a shared burn-down.
type TenantShare struct {
	Tenant string  `json:"tenant"`
	Tasks  int     `json:"tasks"`
	Share  float64 `json:"share"`
}

// RunFairness runs both fairness cases.
func RunFairness(ctx context.Context, o Options) (Fairness, error) {
	var f Fairness
	lone, err1 := RunLoneTenant(ctx, o)
	f.Lone = lone
	if ctx.Err() != nil {
		return f, err1
	}
	shared, err2 := RunSharedBacklog(ctx, o)
	f.Shared = shared
	return f, errors.Join(err1, err2)
}

// Tenants of the fairness cases.
const (
	tenantA = "tenant-a"
	tenantB = "tenant-b"
)

// RunLoneTenant measures how long one task waits behind another
// tenant's backlog: tenant B holds a backlog of o.FairnessBacklog
// single-step runs; once o.FairnessWorkers workers are working on it,
// tenant A triggers one run. It counts what started between A's task
// being queued and starting.
func RunLoneTenant(ctx context.Context, o Options) (res LoneTenant, err error) {
	sh := singleShape()
	log := o.logger().With("scenario", "fairness", "case", "lone tenant")
	c, err := newPGCase(ctx, o, log)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, c.close(ctx)) }()
	wf := c.workflow(sh)
	log.Info("inserting tenant B's backlog", "runs", o.FairnessBacklog)
	if err := insertRuns(ctx, wf, o.FairnessBacklog, runtime.WithTenant(tenantB)); err != nil {
		return res, err
	}
	if err := c.startWorkers(ctx, o.FairnessWorkers); err != nil {
		return res, err
	}
	// Let the workers get going on a tenth of the backlog.
	if err := waitFinished(ctx, c.db.pool, o.FairnessBacklog/10, caseTimeout(o.FairnessBacklog)); err != nil {
		return res, err
	}
	ref, err := wf.Trigger(ctx, nil, runtime.WithTenant(tenantA))
	if err != nil {
		return res, fmt.Errorf("triggering tenant A's run: %w", err)
	}
	if err := waitRun(ctx, c.db.pool, ref.ID, caseTimeout(o.FairnessBacklog)); err != nil {
		return res, err
	}
	if err := c.stopWorkers(); err != nil {
		return res, err
	}
	queued, err := eventTime(ctx, c.db.pool, ref.ID, 0, "QUEUED")
	if err != nil {
		return res, err
	}
	started, err := eventTime(ctx, c.db.pool, ref.ID, 0, "STARTED")
	if err != nil {
		return res, err
	}
	res = LoneTenant{Backlog: o.FairnessBacklog, Workers: o.FairnessWorkers, Wait: started.Sub(queued), Notes: c.notes}
	err = c.db.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT (t.worker, e.at))
		FROM trellis_event_log e JOIN trellis_tasks t ON t.run_id = e.run_id AND t.step = e.step
		WHERE e.type = 'STARTED' AND e.at > $1 AND e.at < $2 AND e.run_id <> $3`,
		queued, started, ref.ID).Scan(&res.TasksAhead, &res.ClaimsAhead)
	if err != nil {
		return res, fmt.Errorf("counting tasks started ahead: %w", err)
	}
	err = c.db.pool.QueryRow(ctx, `SELECT count(*)
		FROM trellis_event_log e JOIN trellis_tasks t ON t.run_id = e.run_id AND t.step = e.step
		WHERE e.type = 'STARTED' AND e.at = $1 AND e.run_id <> $2
		  AND t.worker = (SELECT worker FROM trellis_tasks WHERE run_id = $2 AND step = 0)`,
		started, ref.ID).Scan(&res.ClaimedWith)
	if err != nil {
		return res, fmt.Errorf("counting tasks claimed with A's: %w", err)
	}
	err = c.db.pool.QueryRow(ctx, `SELECT count(*) FROM trellis_runs r
		WHERE r.tenant = $1 AND NOT EXISTS (
			SELECT 1 FROM trellis_event_log e WHERE e.run_id = r.id AND e.type = 'STARTED' AND e.at <= $2)`,
		tenantB, queued).Scan(&res.Waiting)
	if err != nil {
		return res, fmt.Errorf("counting B's waiting tasks: %w", err)
	}
	log.Info("done", "tasks ahead", res.TasksAhead, "claims ahead", res.ClaimsAhead, "wait", res.Wait)
	return res, nil
}

// RunSharedBacklog measures how evenly tenants with equal backlogs are
// served: o.FairnessTenants tenants each insert
// o.FairnessRuns single-step runs (interleaved, in chunks), then
// o.FairnessWorkers workers burn them down. It reports each tenant's
// share of the tasks completed in the first half of the burn-down.
func RunSharedBacklog(ctx context.Context, o Options) (res SharedBacklog, err error) {
	sh := singleShape()
	log := o.logger().With("scenario", "fairness", "case", "shared backlog")
	c, err := newPGCase(ctx, o, log)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, c.close(ctx)) }()
	wf := c.workflow(sh)
	tenants := make([]string, o.FairnessTenants)
	for i := range tenants {
		tenants[i] = fmt.Sprintf("tenant-%d", i+1)
	}
	log.Info("inserting", "tenants", len(tenants), "runs per tenant", o.FairnessRuns)
	const chunk = 500
	for done := 0; done < o.FairnessRuns; done += chunk {
		for _, t := range tenants {
			if err := insertRuns(ctx, wf, min(chunk, o.FairnessRuns-done), runtime.WithTenant(t)); err != nil {
				return res, err
			}
		}
	}
	if err := c.startWorkers(ctx, o.FairnessWorkers); err != nil {
		return res, err
	}
	total := len(tenants) * o.FairnessRuns
	if err := c.waitRunsDone(ctx, total); err != nil {
		return res, err
	}
	if err := c.stopWorkers(); err != nil {
		return res, err
	}
	if err := checkAllCompleted(ctx, c.db.pool); err != nil {
		return res, err
	}
	w, err := burnWindow(ctx, c.db.pool)
	if err != nil {
		return res, err
	}
	mid := w.first.Add(w.elapsed() / 2)
	res = SharedBacklog{Tenants: len(tenants), RunsPerTenant: o.FairnessRuns, Workers: o.FairnessWorkers,
		Elapsed: w.elapsed(), Notes: c.notes}
	counts := map[string]int{}
	rows, err := c.db.pool.Query(ctx, `SELECT r.tenant, count(*) FROM trellis_event_log e JOIN trellis_runs r ON r.id = e.run_id
		WHERE e.type = 'COMPLETED' AND e.at <= $1 GROUP BY r.tenant`, mid)
	if err != nil {
		return res, fmt.Errorf("counting completions by tenant: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			return res, fmt.Errorf("counting completions by tenant: %w", err)
		}
		counts[t] = n
		res.FirstHalf += n
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("counting completions by tenant: %w", err)
	}
	for _, t := range tenants {
		share := 0.0
		if res.FirstHalf > 0 {
			share = float64(counts[t]) / float64(res.FirstHalf)
		}
		res.Shares = append(res.Shares, TenantShare{Tenant: t, Tasks: counts[t], Share: share})
	}
	log.Info("done", "first half", res.FirstHalf)
	return res, nil
}

// waitFinished polls until at least n runs have finished.
func waitFinished(ctx context.Context, pool *pgxpool.Pool, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var done int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM trellis_runs WHERE status <> 'RUNNING'`).Scan(&done); err != nil {
			return fmt.Errorf("counting finished runs: %w", err)
		}
		if done >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d runs finished after %v", done, n, timeout)
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitRun polls until a run has finished.
func waitRun(ctx context.Context, pool *pgxpool.Pool, id runtime.RunID, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var status string
		if err := pool.QueryRow(ctx, `SELECT status FROM trellis_runs WHERE id = $1`, id).Scan(&status); err != nil {
			return fmt.Errorf("reading run %s: %w", id, err)
		}
		if status != "RUNNING" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %s still running after %v", id, timeout)
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
}
