package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// RunMemory runs the memory store's burn-down cases: chain-5 and
// diamond-6, o.MemoryRuns runs each, on one in-process engine.
func RunMemory(ctx context.Context, o Options) ([]Throughput, error) {
	var out []Throughput
	var errs []error
	for _, sh := range []shape{chainShape(), diamondShape()} {
		t, err := memoryBurnDown(ctx, o, sh)
		if err != nil {
			errs = append(errs, fmt.Errorf("memory %s: %w", sh.label, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		out = append(out, t)
	}
	return out, errors.Join(errs...)
}

func memoryBurnDown(ctx context.Context, o Options, sh shape) (res Throughput, err error) {
	log := o.logger().With("scenario", "memory", "workflow", sh.label)
	st := memstore.New()
	logs := &logTail{}
	cfg := runtime.Config{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	o.Engine.apply(&cfg)
	shutdown := o.Engine.withTelemetry(&cfg)
	defer func() { _ = shutdown(context.WithoutCancel(ctx)) }()
	engine, err := runtime.New(cfg)
	if err != nil {
		return res, fmt.Errorf("creating the engine: %w", err)
	}
	wfs, err := register(engine, sh)
	if err != nil {
		return res, err
	}
	wf := wfs[sh.spec.Name]
	log.Info("inserting runs", "runs", o.MemoryRuns)
	t0 := time.Now()
	var ids []runtime.RunID
	for n := o.MemoryRuns; n > 0; n -= insertChunk {
		refs, err := wf.TriggerMany(ctx, emptyInputs(min(n, insertChunk)))
		if err != nil {
			return res, fmt.Errorf("inserting runs: %w", err)
		}
		for _, r := range refs {
			ids = append(ids, r.ID)
		}
	}
	inserted := time.Since(t0)
	if err := engine.Start(ctx); err != nil {
		return res, fmt.Errorf("starting the engine: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = engine.Stop(context.WithoutCancel(ctx))
		}
	}()
	for _, id := range ids {
		if _, err := wf.Wait(ctx, id); err != nil {
			return res, fmt.Errorf("waiting for run %s: %w", id, err)
		}
	}
	stopped = true
	if err := engine.Stop(ctx); err != nil {
		return res, fmt.Errorf("stopping the engine: %w", err)
	}
	var first, last time.Time
	completed := 0
	for _, id := range ids {
		events, err := st.ListEvents(ctx, id)
		if err != nil {
			return res, fmt.Errorf("reading events of run %s: %w", id, err)
		}
		for _, ev := range events {
			switch ev.Type {
			case store.EventStarted:
				if first.IsZero() || ev.At.Before(first) {
					first = ev.At
				}
			case store.EventCompleted:
				completed++
				last = later(last, ev.At)
			}
		}
	}
	total := o.MemoryRuns * sh.tasks()
	if completed != total {
		return res, fmt.Errorf("%d COMPLETED events for %d tasks", completed, total)
	}
	elapsed := last.Sub(first)
	res = Throughput{
		Store: StoreMemory, Workflow: sh.label, Mode: ModeBurnDown, Runs: o.MemoryRuns, Tasks: total,
		Elapsed: elapsed, TasksPerSec: perSecond(total, elapsed), RunsPerSec: perSecond(o.MemoryRuns, elapsed),
		InsertedPerSec: perSecond(o.MemoryRuns, inserted), Notes: logs.problems(),
	}
	log.Info("done", "tasks/s", int(res.TasksPerSec))
	return res, nil
}
