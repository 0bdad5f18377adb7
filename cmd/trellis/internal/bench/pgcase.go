package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// pgCase is one Postgres case: a fresh schema, an engine the harness
// triggers runs through (never started: it executes nothing), and worker
// processes once started. Its owner defers close.
type pgCase struct {
	o       Options
	log     *slog.Logger
	db      *database
	trigger *runtime.Engine
	// stopTelemetry shuts the trigger engine's OpenTelemetry down.
	stopTelemetry func(context.Context) error
	wfs           map[string]*runtime.Workflow
	workers       *cluster
	notes         []string
}

func newPGCase(ctx context.Context, o Options, log *slog.Logger) (*pgCase, error) {
	db, err := openDatabase(ctx, o.DatabaseURL)
	if err != nil {
		return nil, err
	}
	c := &pgCase{o: o, log: log, db: db, wfs: map[string]*runtime.Workflow{}}
	cfg := runtime.Config{Store: pgstore.New(db.pool)}
	c.stopTelemetry = o.Engine.withTelemetry(&cfg)
	c.trigger, err = runtime.New(cfg)
	if err != nil {
		_ = c.close(ctx)
		return nil, fmt.Errorf("creating the harness engine: %w", err)
	}
	for _, s := range workerShapes() {
		wf, err := c.trigger.Workflow(s.spec)
		if err != nil {
			_ = c.close(ctx)
			return nil, fmt.Errorf("compiling %s: %w", s.label, err)
		}
		c.wfs[s.spec.Name] = wf
	}
	log.Debug("schema ready", "schema", db.schema)
	return c, nil
}

// workflow returns the trigger handle of a shape.
func (c *pgCase) workflow(s shape) *runtime.Workflow { return c.wfs[s.spec.Name] }

// startWorkers starts n worker processes and, once all are ready, their
// engines.
func (c *pgCase) startWorkers(ctx context.Context, n int) error {
	w, err := startCluster(ctx, c.db, c.o.WorkerCommand, n, c.o.Engine)
	if err != nil {
		return err
	}
	c.workers = w
	return w.start()
}

// stopWorkers stops the workers gracefully and keeps what they logged
// that looks wrong as notes.
func (c *pgCase) stopWorkers() error {
	if c.workers == nil {
		return nil
	}
	err := c.workers.stop()
	c.notes = append(c.notes, c.workers.logProblems()...)
	c.workers.kill()
	c.workers = nil
	return err
}

// close kills any worker still running and drops the schema (unless
// Keep).
func (c *pgCase) close(ctx context.Context) error {
	var errs []error
	if c.workers != nil {
		c.workers.kill()
		c.workers = nil
	}
	if c.stopTelemetry != nil {
		errs = append(errs, c.stopTelemetry(context.WithoutCancel(ctx)))
	}
	if c.db != nil {
		if c.o.Keep {
			c.log.Info("keeping schema", "schema", c.db.schema)
		}
		errs = append(errs, c.db.close(context.WithoutCancel(ctx), c.o.Keep))
	}
	return errors.Join(errs...)
}

// waitRunsDone waits for every run of the case to finish (see
// waitRunsDone) within caseTimeout(tasks). An error says what the workers
// logged that looks wrong, which is where a stuck worker says why.
func (c *pgCase) waitRunsDone(ctx context.Context, tasks int) error {
	err := waitRunsDone(ctx, c.db.pool, 25*time.Millisecond, caseTimeout(tasks), c.o.stall())
	if err != nil && c.workers != nil {
		if problems := c.workers.logProblems(); len(problems) > 0 {
			err = fmt.Errorf("%w; the workers logged:\n%s", err, strings.Join(problems, "\n"))
		}
	}
	return err
}

// caseTimeout bounds how long a case waits for tasks to be done: generous,
// so that only a stuck engine reaches it.
func caseTimeout(tasks int) time.Duration {
	return 2*time.Minute + time.Duration(tasks)*5*time.Millisecond
}
