package golang

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/effectivelabs/trellis/schema/spec"
)

// Spec returns the spec the generated <W>Spec function returns (see
// workflow.Workflow.Spec). The generated literal is rendered from this
// value, so a test can hand the very same spec to runtime.Compile.
func (p *Plan) Spec() *spec.Workflow { return p.w.Spec() }

// spec renders <W>Spec, which returns Plan.Spec as a literal.
func (e *emitter) spec() {
	w := e.p.Spec()
	fields := []jen.Code{kv("Name", jen.Lit(w.Name))}
	if w.Description != "" {
		fields = append(fields, kv("Description", jen.Lit(w.Description)))
	}
	fields = append(fields,
		kv("Source", jen.Lit(w.Source)),
		kv("InputSchema", rawString(w.InputSchema)),
	)
	if w.Priority != "" {
		fields = append(fields, kv("Priority", jen.Lit(w.Priority)))
	}
	if w.Concurrency != nil {
		fields = append(fields, kv("Concurrency", concurrencyCode(w.Concurrency)))
	}
	if l := w.RunConcurrency; l != nil {
		fields = append(fields, kv("RunConcurrency", jen.Op("&").Qual(runtimePkg, "RunConcurrencySpec").Values(
			kv("Key", jen.Lit(l.Key)), kv("Max", jen.Lit(l.Max)), kv("Strategy", jen.Lit(string(l.Effective()))))))
	}
	if db := w.Debounce; db != nil {
		dfields := []jen.Code{kv("Key", jen.Lit(db.Key)), kv("Window", durationCode(db.Window))}
		if db.MaxWait > 0 {
			dfields = append(dfields, kv("MaxWait", durationCode(db.MaxWait)))
		}
		fields = append(fields, kv("Debounce", jen.Op("&").Qual(runtimePkg, "DebounceSpec").Values(dfields...)))
	}
	if w.RateLimit != nil {
		fields = append(fields, kv("RateLimit", rateLimitCode(w.RateLimit)))
	}
	if w.Timeout > 0 {
		fields = append(fields, kv("Timeout", durationCode(w.Timeout)))
	}
	steps := make([]jen.Code, 0, len(w.Steps))
	for _, s := range w.Steps {
		steps = append(steps, stepSpec(s))
	}
	fields = append(fields, kv("Steps", jen.Index().Qual(runtimePkg, "StepSpec").Add(multi(steps...))))
	if h := w.OnFailure; h != nil {
		handler := []jen.Code{kv("Name", jen.Lit(h.Name)), kv("Retry", retryCode(h.Retry))}
		if h.Timeout > 0 {
			handler = append(handler, kv("Timeout", durationCode(h.Timeout)))
		}
		if len(h.RunsOn) > 0 {
			handler = append(handler, kv("RunsOn", labelsCode(h.RunsOn)))
		}
		fields = append(fields, kv("OnFailure", jen.Op("&").Qual(runtimePkg, "OnFailureSpec").Values(handler...)))
	}
	if len(w.Schedules) > 0 {
		list := make([]jen.Code, len(w.Schedules))
		for i, sc := range w.Schedules {
			f := []jen.Code{kv("Name", jen.Lit(sc.Name)), kv("Cron", jen.Lit(sc.Cron))}
			if sc.Timezone != "" {
				f = append(f, kv("Timezone", jen.Lit(sc.Timezone)))
			}
			if sc.Input != "" {
				f = append(f, kv("Input", rawString(sc.Input)))
			}
			if sc.Tenant != "" {
				f = append(f, kv("Tenant", jen.Lit(sc.Tenant)))
			}
			list[i] = jen.Values(f...)
		}
		fields = append(fields, kv("Schedules", jen.Index().Qual(runtimePkg, "ScheduleSpec").Add(multi(list...))))
	}
	if len(w.Events) > 0 {
		list := make([]jen.Code, len(w.Events))
		for i, ev := range w.Events {
			list[i] = jen.Values(kv("Name", jen.Lit(ev.Name)), kv("Schema", rawString(ev.Schema)))
		}
		fields = append(fields, kv("Events", jen.Index().Qual(runtimePkg, "EventSpec").Add(multi(list...))))
	}
	if len(w.StartOn) > 0 {
		list := make([]jen.Code, len(w.StartOn))
		for i, st := range w.StartOn {
			f := []jen.Code{kv("Event", jen.Lit(st.Event))}
			if st.If != "" {
				f = append(f, kv("If", jen.Lit(st.If)))
			}
			if len(st.Input) > 0 {
				names := slices.Sorted(maps.Keys(st.Input))
				input := make([]jen.Code, len(names))
				for j, name := range names {
					input[j] = jen.Lit(name).Op(":").Lit(st.Input[name])
				}
				f = append(f, kv("Input", jen.Map(jen.String()).String().Add(multi(input...))))
			}
			if st.InputExpr != "" {
				f = append(f, kv("InputExpr", jen.Lit(st.InputExpr)))
			}
			list[i] = jen.Values(f...)
		}
		fields = append(fields, kv("StartOn", jen.Index().Qual(runtimePkg, "StartOnSpec").Add(multi(list...))))
	}
	name := e.w + "Spec"
	text := fmt.Sprintf("%s returns the definition of the %s workflow, as declared in %s. Each call returns a new value.", name, w.Name, w.Source)
	e.f.Add(doc(text).Func().Id(name).Params().Op("*").Qual(runtimePkg, "WorkflowSpec").Block(
		jen.Return(jen.Op("&").Qual(runtimePkg, "WorkflowSpec").Add(multi(fields...))),
	))
}

func stepSpec(s spec.Step) jen.Code {
	fields := []jen.Code{kv("Name", jen.Lit(s.Name))}
	if len(s.Parents) > 0 {
		names := make([]jen.Code, len(s.Parents))
		for i, p := range s.Parents {
			names[i] = jen.Lit(p)
		}
		fields = append(fields, kv("Parents", jen.Index().String().Values(names...)))
	}
	if len(s.SkipIf) > 0 {
		conds := make([]jen.Code, len(s.SkipIf))
		for i, c := range s.SkipIf {
			conds[i] = jen.Lit(c)
		}
		fields = append(fields, kv("SkipIf", jen.Index().String().Values(conds...)))
	}
	if s.IsSleep() {
		fields = append(fields, kv("Sleep", durationCode(s.Sleep)))
		return multi(fields...)
	}
	if w := s.WaitFor; w != nil {
		wait := []jen.Code{kv("Event", jen.Lit(w.Event))}
		if w.Key != "" {
			wait = append(wait, kv("Key", jen.Lit(w.Key)))
		}
		if w.Timeout > 0 {
			wait = append(wait, kv("Timeout", durationCode(w.Timeout)))
		}
		if w.OnTimeout != "" {
			wait = append(wait, kv("OnTimeout", jen.Lit(w.OnTimeout)))
		}
		fields = append(fields, kv("WaitFor", jen.Op("&").Qual(runtimePkg, "WaitForSpec").Values(wait...)))
		if s.OutputSchema != "" {
			fields = append(fields, kv("OutputSchema", rawString(s.OutputSchema)))
		}
		return multi(fields...)
	}
	fields = append(fields, kv("Retry", retryCode(s.Retry)))
	if s.Timeout > 0 {
		fields = append(fields, kv("Timeout", durationCode(s.Timeout)))
	}
	if s.OutputSchema != "" {
		fields = append(fields, kv("OutputSchema", rawString(s.OutputSchema)))
	}
	if s.Concurrency != nil {
		fields = append(fields, kv("Concurrency", concurrencyCode(s.Concurrency)))
	}
	if s.RateLimit != nil {
		fields = append(fields, kv("RateLimit", rateLimitCode(s.RateLimit)))
	}
	if c := s.Workflow; c != nil {
		child := []jen.Code{kv("Name", jen.Lit(c.Name))}
		if len(c.Input) > 0 {
			names := make([]string, 0, len(c.Input))
			for name := range c.Input {
				names = append(names, name)
			}
			slices.Sort(names)
			input := make([]jen.Code, len(names))
			for i, name := range names {
				input[i] = jen.Lit(name).Op(":").Lit(c.Input[name])
			}
			child = append(child, kv("Input", jen.Map(jen.String()).String().Add(multi(input...))))
		}
		fields = append(fields, kv("Workflow", jen.Op("&").Qual(runtimePkg, "ChildWorkflowSpec").Values(child...)))
	}
	if f := s.ForEach; f != nil {
		each := []jen.Code{kv("Items", jen.Lit(f.Items))}
		if f.Concurrency > 0 {
			each = append(each, kv("Concurrency", jen.Lit(f.Concurrency)))
		}
		each = append(each, kv("ItemSchema", rawString(f.ItemSchema)))
		fields = append(fields, kv("ForEach", jen.Op("&").Qual(runtimePkg, "ForEachSpec").Values(each...)))
	}
	if len(s.RunsOn) > 0 {
		fields = append(fields, kv("RunsOn", labelsCode(s.RunsOn)))
	}
	return multi(fields...)
}

// labelsCode is a map literal of worker labels, in key order.
func labelsCode(labels map[string]string) jen.Code {
	keys := slices.Sorted(maps.Keys(labels))
	entries := make([]jen.Code, len(keys))
	for i, k := range keys {
		entries[i] = jen.Lit(k).Op(":").Lit(labels[k])
	}
	return jen.Map(jen.String()).String().Values(entries...)
}

func concurrencyCode(c *spec.Concurrency) jen.Code {
	return jen.Op("&").Qual(runtimePkg, "ConcurrencySpec").Values(kv("Key", jen.Lit(c.Key)), kv("Max", jen.Lit(c.Max)))
}

func rateLimitCode(r *spec.RateLimit) jen.Code {
	var fields []jen.Code
	if r.Key != "" {
		fields = append(fields, kv("Key", jen.Lit(r.Key)))
	}
	fields = append(fields, kv("Limit", jen.Lit(r.Limit)), kv("Per", durationCode(r.Per)))
	if r.Burst > 0 {
		fields = append(fields, kv("Burst", jen.Lit(r.Burst)))
	}
	return jen.Op("&").Qual(runtimePkg, "RateLimitSpec").Values(fields...)
}

func retryCode(r spec.RetryPolicy) jen.Code {
	return jen.Qual(runtimePkg, "RetryPolicy").Values(
		kv("MaxRetries", jen.Lit(r.MaxRetries)),
		kv("InitialDelay", durationCode(r.InitialDelay)),
		kv("BackoffFactor", jen.Op(strconv.FormatFloat(r.BackoffFactor, 'g', -1, 64))),
		kv("MaxDelay", durationCode(r.MaxDelay)),
	)
}

// durationCode renders a duration the way people write it: 24 * time.Hour
// rather than 86400000000000.
func durationCode(d time.Duration) jen.Code {
	units := []struct {
		unit time.Duration
		name string
	}{
		{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"},
		{time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"},
	}
	for _, u := range units {
		if d%u.unit != 0 {
			continue
		}
		if n := d / u.unit; n != 1 {
			return jen.Op(strconv.FormatInt(int64(n), 10)).Op("*").Qual("time", u.name)
		}
		return jen.Qual("time", u.name)
	}
	return jen.Qual("time", "Duration").Call(jen.Op(strconv.FormatInt(int64(d), 10)))
}

// refs renders <W>Refs: the typed identity of every step, and of the
// failure handler, as a runtime.StepRef with the step's output type. The
// typed result is decoded through them (see result), and users pass them
// to runtime.Output and trellistest.Output, so that no code names a step
// as a string or its output type twice.
func (e *emitter) refs() {
	typ := unexported(e.w) + "Refs"
	name := e.w + "Refs"
	steps, methods := "every step", "one method per step"
	if h := e.p.w.OnFailure; h != nil {
		steps, methods = "every step and of the failure handler", "one method per step and one for the failure handler"
	}
	text := fmt.Sprintf("%s holds the typed reference (runtime.StepRef) of %s of %s: the step's identity with its output type, for runtime.Output and trellistest.Output. The client reads the outputs and statuses of its %s through them.", name, steps, e.p.w.Name, e.resultType())
	e.f.Add(doc(text).Var().Id(name).Id(typ))
	e.f.Add(doc(fmt.Sprintf("%s is the type of %s; it has %s.", typ, name, methods)).Type().Id(typ).Struct())
	ref := func(goName, step, what string, out jen.Code) {
		e.f.Add(doc(fmt.Sprintf("%s refers to %s %s.", goName, what, step)).
			Func().Params(jen.Id(typ)).Id(goName).Params().Qual(runtimePkg, "StepRef").Types(out).Block(
			jen.Return(jen.Qual(runtimePkg, "NewStepRef").Types(out).Call(jen.Lit(e.p.w.Name), jen.Lit(step))),
		))
	}
	for _, s := range e.p.steps {
		var out jen.Code = jen.Qual(runtimePkg, "NoOutput")
		if s.output != nil {
			out = s.result()
		}
		ref(s.goName, s.step.Name, "step", out)
	}
	if h := e.p.w.OnFailure; h != nil {
		ref(e.p.onFailure, h.Name, "the failure handler", jen.Qual(runtimePkg, "NoOutput"))
	}
}
