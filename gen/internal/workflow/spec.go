package workflow

import (
	"encoding/json"
	"maps"
	"path/filepath"

	"github.com/effectivelabs/trellis/schema/spec"
)

// Spec returns the workflow's declarative form, the model the runtime
// compiles and generated code embeds: effective settings (defaults
// merged), so nothing else needs to know the file. On a partial model
// (one Parse reported problems for) the spec is partial too.
func (w *Workflow) Spec() *spec.Workflow {
	out := &spec.Workflow{Name: w.Name, Description: w.Description, Source: filepath.Base(w.File)}
	if w.Input != nil {
		out.InputSchema = w.Input.JSON
	}
	if w.Priority != nil {
		out.Priority = w.Priority.Source
	}
	out.Concurrency = w.Concurrency.spec()
	out.RateLimit = w.RateLimit.spec()
	out.Timeout = w.Timeout
	out.RunConcurrency = w.RunConcurrency.spec()
	if db := w.Debounce; db != nil {
		out.Debounce = &spec.Debounce{Key: db.Key.Source, Window: db.Window, MaxWait: db.MaxWait}
	}
	for _, s := range w.Steps {
		step := spec.Step{Name: s.Name, Sleep: s.Sleep}
		for _, ref := range s.Parents {
			step.Parents = append(step.Parents, ref.Name)
		}
		for _, c := range s.SkipIf {
			step.SkipIf = append(step.SkipIf, c.Source)
		}
		if w := s.WaitFor; w != nil {
			step.WaitFor = &spec.WaitFor{Event: w.Event, Timeout: w.Timeout, OnTimeout: w.OnTimeout}
			if w.Key != nil {
				step.WaitFor.Key = w.Key.Source
			}
			if s.Output != nil {
				step.OutputSchema = s.Output.JSON
			}
		}
		if !s.IsSleep() && !s.IsWait() {
			step.Retry, step.Timeout = s.Retry, s.Timeout
			if s.Output != nil {
				step.OutputSchema = s.Output.JSON
			}
			step.Concurrency = s.Concurrency.spec()
			step.RateLimit = s.RateLimit.spec()
			if len(s.RunsOn) > 0 {
				step.RunsOn = maps.Clone(s.RunsOn)
			}
			if c := s.Child; c != nil {
				step.Workflow = &spec.ChildWorkflow{Name: c.Name}
				for _, f := range c.Input {
					if step.Workflow.Input == nil {
						step.Workflow.Input = map[string]string{}
					}
					step.Workflow.Input[f.Name] = f.Expr.Source
				}
			}
			if f := s.ForEach; f != nil {
				step.ForEach = &spec.ForEach{Items: f.Items.Source, Concurrency: f.Concurrency}
				if f.Item != nil {
					step.ForEach.ItemSchema = f.Item.JSON
				}
			}
		}
		out.Steps = append(out.Steps, step)
	}
	if h := w.OnFailure; h != nil {
		out.OnFailure = &spec.OnFailure{Name: h.Name, Retry: h.Retry, Timeout: h.Timeout}
		if len(h.RunsOn) > 0 {
			out.OnFailure.RunsOn = maps.Clone(h.RunsOn)
		}
	}
	for _, ev := range w.Events {
		e := spec.Event{Name: ev.Name}
		if ev.Schema != nil {
			e.Schema = ev.Schema.JSON
		}
		out.Events = append(out.Events, e)
	}
	for _, st := range w.StartOn {
		s := spec.StartOn{Event: st.Event}
		if st.If != nil {
			s.If = st.If.Source
		}
		if st.Whole != nil {
			s.InputExpr = st.Whole.Source
		}
		for _, f := range st.Fields {
			if s.Input == nil {
				s.Input = map[string]string{}
			}
			s.Input[f.Name] = f.Expr.Source
		}
		out.StartOn = append(out.StartOn, s)
	}
	for _, sc := range w.Schedules {
		out.Schedules = append(out.Schedules, spec.Schedule{
			Name: sc.Name, Cron: sc.Cron, Timezone: sc.Timezone, Input: sc.inputJSON(), Tenant: sc.Tenant,
		})
	}
	return out
}

// inputJSON is the schedule's input as compact JSON with sorted keys, or
// "" when it has none.
func (sc *Schedule) inputJSON() string {
	if sc.Input == nil {
		return ""
	}
	b, err := json.Marshal(sc.Input.JSON())
	if err != nil {
		return ""
	}
	return string(b)
}

func (c *Concurrency) spec() *spec.Concurrency {
	if c == nil {
		return nil
	}
	return &spec.Concurrency{Key: c.Key.Source, Max: c.Max}
}

func (c *RunConcurrency) spec() *spec.RunConcurrency {
	if c == nil {
		return nil
	}
	return &spec.RunConcurrency{Key: c.Key.Source, Max: c.Max, Strategy: c.Strategy}
}

func (r *RateLimit) spec() *spec.RateLimit {
	if r == nil {
		return nil
	}
	out := &spec.RateLimit{Limit: r.Limit, Per: r.Per}
	if r.Key != nil {
		out.Key = r.Key.Source
	}
	if r.Burst > 1 {
		out.Burst = r.Burst
	}
	return out
}
