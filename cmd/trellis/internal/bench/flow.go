package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/schema/spec"
)

// The flow-control scenario: diamond-6 burn-downs under concurrency
// limits and with mixed priorities, beside one without either, each with
// one worker process, so that what limits and priorities cost shows
// against the same database in one run.

// Labels of the flow-control cases.
const (
	// FlowPlainLabel is diamond-6 with no limit, the baseline.
	FlowPlainLabel = DiamondLabel
	// FlowKeysLabel limits each of flowKeys keys to flowKeysMax steps.
	FlowKeysLabel = "diamond-6, 10k keys"
	// FlowHotLabel limits every run to one key of flowHotMax steps.
	FlowHotLabel = "diamond-6, 1 hot key"
	// FlowPriorityLabel mixes runs of the three priorities.
	FlowPriorityLabel = "diamond-6, 3 priorities"
	// FlowRateKeysLabel paces each of flowKeys keys at flowRateKeys starts
	// a second.
	FlowRateKeysLabel = "diamond-6, 10k rate keys"
	// FlowRateHotLabel paces every run's steps at flowRateHot a second.
	FlowRateHotLabel = "diamond-6, 1 rate key"
)

const (
	keyedName  = "bench-diamond-keys"
	hotKeyName = "bench-diamond-hot"
	// flowKeys distinct keys, each with up to flowKeysMax steps in
	// progress: enough for a run's four parallel steps, so the limit
	// rarely binds and what shows is its bookkeeping.
	flowKeys    = 10_000
	flowKeysMax = 4
	// flowHotMax steps of the one hot key in progress at once.
	flowHotMax = 64
	// flowRateKeys starts a second per key, with bursts of as many: with
	// 10,000 keys the pace rarely binds, and what shows is its
	// bookkeeping.
	flowRateKeys = 100
	// flowRateHot starts a second of the one key: below what a worker
	// claims, so the pace binds and tasks/s shows how close to it the
	// engine keeps.
	flowRateHot = 2_000
)

// keyedShape is diamond-6 under a workflow-wide limit by input.k.
func keyedShape() shape {
	return limitedShape(FlowKeysLabel, keyedName, flowKeysMax)
}

// hotKeyShape is diamond-6 under a limit whose key every run shares.
func hotKeyShape() shape {
	return limitedShape(FlowHotLabel, hotKeyName, flowHotMax)
}

// rateKeysShape paces each key at flowRateKeys starts a second.
func rateKeysShape() shape { return rateShape(FlowRateKeysLabel, flowRateKeys, flowRateKeys) }

// rateHotShape paces the one key at flowRateHot starts a second.
func rateHotShape() shape { return rateShape(FlowRateHotLabel, flowRateHot, 1) }

// rateShape is diamond-6 under a workflow-wide rate limit by input.k.
func rateShape(label string, perSecond, burst int) shape {
	return keyedDiamond(label, "bench-diamond-rate-"+fmt.Sprint(perSecond), func(s *runtime.WorkflowSpec) {
		s.RateLimit = &runtime.RateLimitSpec{Key: "input.k", Limit: perSecond, Per: time.Second, Burst: burst}
	})
}

// limitedShape is diamond-6 under a workflow-wide concurrency limit by
// input.k.
func limitedShape(label, name string, limit int) shape {
	return keyedDiamond(label, name, func(s *runtime.WorkflowSpec) {
		s.Concurrency = &runtime.ConcurrencySpec{Key: "input.k", Max: limit}
	})
}

// keyedDiamond is diamond-6 named name, whose input has a key k, with the
// flow control limit sets.
func keyedDiamond(label, name string, limit func(*runtime.WorkflowSpec)) shape {
	sh := diamondShape()
	spec := sh.spec.Clone()
	spec.Name, spec.Description = name, "Trellis bench workflow: "+label+", steps that do nothing."
	spec.InputSchema = `{"type":"object","properties":{"k":{"type":"string"}}}`
	limit(&spec)
	return shape{label: label, spec: &spec, parents: sh.parents}
}

// RunFlow runs the flow-control cases.
func RunFlow(ctx context.Context, o Options) ([]Throughput, error) {
	var out []Throughput
	var errs []error
	add := func(t Throughput, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.Workflow, err))
			return
		}
		out = append(out, t)
	}
	plain := func(ctx context.Context, wf *runtime.Workflow) error { return insertRuns(ctx, wf, o.Runs) }
	t, err := burnDown(ctx, o, ScenarioFlow, diamondShape(), 1, plain, nil)
	add(withLabel(t, FlowPlainLabel), err)
	keyed := func(ctx context.Context, wf *runtime.Workflow) error {
		return insertKeyed(ctx, wf, o.Runs, func(i int) string { return fmt.Sprintf("c%d", i%flowKeys) })
	}
	t, err = burnDown(ctx, o, ScenarioFlow, keyedShape(), 1, keyed, nil)
	add(withLabel(t, FlowKeysLabel), err)
	// A fifth of the runs: one key's slots turn over far slower than
	// workers claim (see docs/performance.md).
	hotOpts := o
	hotOpts.Runs = max(o.Runs/5, 1)
	hot := func(ctx context.Context, wf *runtime.Workflow) error {
		return insertKeyed(ctx, wf, hotOpts.Runs, func(int) string { return "hot" })
	}
	t, err = burnDown(ctx, hotOpts, ScenarioFlow, hotKeyShape(), 1, hot, nil)
	add(withLabel(t, FlowHotLabel), err)
	t, err = burnDown(ctx, o, ScenarioFlow, diamondShape(), 1, insertPriorities(o.Runs), reportPriorities)
	add(withLabel(t, FlowPriorityLabel), err)
	t, err = burnDown(ctx, o, ScenarioFlow, rateKeysShape(), 1, keyed, nil)
	add(withLabel(t, FlowRateKeysLabel), err)
	t, err = burnDown(ctx, hotOpts, ScenarioFlow, rateHotShape(), 1, hot, nil)
	add(withLabel(t, FlowRateHotLabel), err)
	return out, errors.Join(errs...)
}

func withLabel(t Throughput, label string) Throughput {
	t.Workflow = label
	return t
}

// insertKeyed inserts n runs whose input.k is key(i).
func insertKeyed(ctx context.Context, wf *runtime.Workflow, n int, key func(i int) string) error {
	for done := 0; done < n; {
		c := min(n-done, insertChunk)
		in := make([]json.RawMessage, c)
		for i := range in {
			k, _ := json.Marshal(key(done + i))
			in[i] = json.RawMessage(`{"k":` + string(k) + `}`)
		}
		if _, err := wf.TriggerMany(ctx, in); err != nil {
			return fmt.Errorf("inserting runs of %s: %w", wf.Name(), err)
		}
		done += c
	}
	return nil
}

// insertPriorities inserts n runs, the priorities taking turns chunk by
// chunk, low first: without priorities, the high ones would be done last.
func insertPriorities(n int) func(context.Context, *runtime.Workflow) error {
	return func(ctx context.Context, wf *runtime.Workflow) error {
		for done, p := 0, runtime.PriorityLow; done < n; p = p%runtime.PriorityHigh + 1 {
			c := min(n-done, insertChunk)
			if _, err := wf.TriggerMany(ctx, emptyInputs(c), runtime.WithPriority(p)); err != nil {
				return fmt.Errorf("inserting runs of %s: %w", wf.Name(), err)
			}
			done += c
		}
		return nil
	}
}

// reportPriorities notes when the runs of each priority finished, at the
// median, from the start of the burn-down.
func reportPriorities(ctx context.Context, pool *pgxpool.Pool, w window, res *Throughput) error {
	rows, err := pool.Query(ctx, `
		SELECT priority, percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - $1::timestamptz))
		FROM trellis_runs GROUP BY priority ORDER BY priority DESC`, w.first)
	if err != nil {
		return fmt.Errorf("reading finish times: %w", err)
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var p int
		var median float64
		if err := rows.Scan(&p, &median); err != nil {
			return err
		}
		parts = append(parts, fmt.Sprintf("%s %s", spec.PriorityName(p), (time.Duration(median*float64(time.Second))).Round(10*time.Millisecond)))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	res.Notes = append(res.Notes, "median run finished after: "+strings.Join(parts, ", "))
	return nil
}
