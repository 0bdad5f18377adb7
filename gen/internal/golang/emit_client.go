package golang

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

func (e *emitter) resultType() string { return e.w + "Result" }
func (e *emitter) clientType() string { return e.w + "Client" }
func (e *emitter) resultFunc() string { return unexported(e.w) + "Result" }

// withOutput are the steps that declare an output.
func (e *emitter) withOutput() []*stepPlan {
	var out []*stepPlan
	for _, s := range e.p.steps {
		if s.output != nil {
			out = append(out, s)
		}
	}
	return out
}

// refOf is the expression <W>Refs.<goName>(), the typed reference of a
// step or of the failure handler.
func (e *emitter) refOf(goName string) *jen.Statement {
	return jen.Id(e.w + "Refs").Dot(goName).Call()
}

// result renders <W>StepStatuses, <W>Result (a run's state with typed
// outputs and step statuses) and the function that decodes it from a
// runtime.RunResult. That function reads every status and output through
// <W>Refs (StepRef.Status, and runtime.DecodeOutput, which is
// runtime.Output), the path users' code takes too, and names no step as a
// string.
func (e *emitter) result() {
	name, w := e.resultType(), e.p.w.Name
	statuses := e.w + "StepStatuses"
	var statusFields, statusValues []jen.Code
	for _, s := range e.p.steps {
		text := fmt.Sprintf("%s is the status of step %s.", s.goName, s.step.Name)
		statusFields = append(statusFields, doc(text).Id(s.goName).Qual(runtimePkg, "TaskStatus"))
		statusValues = append(statusValues, kv(s.goName, e.refOf(s.goName).Dot("Status").Call(jen.Id("res"))))
	}
	if h := e.p.w.OnFailure; h != nil {
		text := fmt.Sprintf("%s is the status of the failure handler %s.", e.p.onFailure, h.Name)
		statusFields = append(statusFields, doc(text).Id(e.p.onFailure).Qual(runtimePkg, "TaskStatus"))
		statusValues = append(statusValues, kv(e.p.onFailure, e.refOf(e.p.onFailure).Dot("Status").Call(jen.Id("res"))))
	}
	text := fmt.Sprintf("%s holds the status of every step of %s %s run, and of its failure handler if it has one; a status is empty when the run has no task for the step.", statuses, article(w), w)
	e.f.Add(doc(text).Type().Id(statuses).Struct(statusFields...))

	fields := []jen.Code{
		doc("ID identifies the run.").Id("ID").Qual(runtimePkg, "RunID"),
		doc("Status is how the run ended (or that it is still running).").Id("Status").Qual(runtimePkg, "RunStatus"),
		doc("Steps holds the status of each step.").Id("Steps").Id(statuses),
	}
	for _, s := range e.withOutput() {
		text := fmt.Sprintf("%s is the output of step %s; nil unless it completed.", s.goName, s.step.Name)
		fields = append(fields, doc(text).Id(s.goName).Op("*").Add(s.result()))
	}
	fields = append(fields, doc("Failure is set when the run failed.").Id("Failure").Op("*").Qual(runtimePkg, "Failure"))
	text = fmt.Sprintf("%s is the state of %s %s run with its typed outputs: how it ended, as Run and Wait return it, or how far it got, as Result returns it.", name, article(w), w)
	e.f.Add(doc(text).Type().Id(name).Struct(fields...))

	body := []jen.Code{
		jen.If(jen.Id("res").Op("==").Nil()).Block(jen.Return(jen.Id(name).Values(), jen.Id("runErr"))),
		jen.Id("out").Op(":=").Id(name).Add(multi(
			kv("ID", jen.Id("res").Dot("ID")),
			kv("Status", jen.Id("res").Dot("Status")),
			kv("Steps", jen.Id(statuses).Add(multi(statusValues...))),
			kv("Failure", jen.Id("res").Dot("Failure")),
		)),
	}
	outputs := e.withOutput()
	if len(outputs) == 0 {
		body = append(body, jen.Return(jen.Id("out"), jen.Id("runErr")))
	} else {
		body = append(body, jen.Var().Id("errs").Index().Error())
		for _, s := range outputs {
			body = append(body, jen.Id("out").Dot(s.goName).Op("=").Qual(runtimePkg, "DecodeOutput").Call(
				jen.Id("res"), e.refOf(s.goName), jen.Op("&").Id("errs")))
		}
		body = append(body,
			jen.If(jen.Len(jen.Id("errs")).Op(">").Lit(0)).Block(
				jen.Return(jen.Id("out"), jen.Qual("errors", "Join").Call(jen.Append(jen.Index().Error().Values(jen.Id("runErr")), jen.Id("errs").Op("...")).Op("..."))),
			),
			jen.Return(jen.Id("out"), jen.Id("runErr")),
		)
	}
	text = fmt.Sprintf("%s converts a runtime result into %s %s. It returns runErr as is unless an output does not decode, which is joined to it.", e.resultFunc(), article(name), name)
	e.f.Add(doc(text).
		Func().Id(e.resultFunc()).Params(
		jen.Id("res").Op("*").Qual(runtimePkg, "RunResult"), jen.Id("runErr").Error(),
	).Params(jen.Id(name), jen.Error()).Block(body...))
}

// client renders <W>Client and the functions that make one.
func (e *emitter) client() {
	w, name, client := e.p.w.Name, e.w, e.clientType()
	spec := jen.Id(name + "Spec").Call()
	ret := func(call jen.Code) []jen.Code {
		return []jen.Code{
			jen.List(jen.Id("w"), jen.Err()).Op(":=").Add(call),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.Return(jen.Op("&").Id(client).Values(kv("workflow", jen.Id("w"))), jen.Nil()),
		}
	}
	e.f.Add(doc(fmt.Sprintf("%s triggers %s runs, waits for them and reads their results.", client, w)).Type().Id(client).Struct(
		jen.Id("workflow").Op("*").Qual(runtimePkg, "Workflow"),
	))
	e.f.Add(doc(fmt.Sprintf("New%s returns a client that triggers %s runs on e, for processes that do not execute its steps.", client, w)).
		Func().Id("New"+client).Params(jen.Id("e").Op("*").Qual(runtimePkg, "Engine")).Params(jen.Op("*").Id(client), jen.Error()).
		Block(ret(jen.Id("e").Dot("Workflow").Call(spec.Clone()))...))

	handlers := []jen.Code{}
	steps := []jen.Code{}
	for _, s := range e.codeSteps() {
		steps = append(steps, jen.Lit(s.step.Name).Op(":").Add(e.adapter(s)))
	}
	handlers = append(handlers, kv("Steps", jen.Map(jen.String()).Qual(runtimePkg, "StepFunc").Add(multi(steps...))))
	if e.p.w.OnFailure != nil {
		handlers = append(handlers, kv("OnFailure", jen.Qual(runtimePkg, "FailureHandler").Call(jen.Id("steps").Dot(e.p.onFailure))))
	}
	register := "Register" + name
	body := append([]jen.Code{
		jen.If(jen.Id("steps").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("errors", "New").Call(jen.Lit(register+": steps is nil"))),
		),
	}, ret(jen.Id("e").Dot("Register").Call(spec.Clone(), jen.Qual(runtimePkg, "Handlers").Add(multi(handlers...))))...)
	e.f.Add(doc(fmt.Sprintf("%s registers steps as the code of the %s workflow on e, so that e executes its runs, and returns a client for it.", register, w)).
		Func().Id(register).Params(
		jen.Id("e").Op("*").Qual(runtimePkg, "Engine"), jen.Id("steps").Id(name+"Steps"),
	).Params(jen.Op("*").Id(client), jen.Error()).Block(body...))

	recv := jen.Id("c").Op("*").Id(client)
	e.f.Add(doc("Workflow is the runtime handle of the workflow, for what the typed client does not cover.").
		Func().Params(recv.Clone()).Id("Workflow").Params().Op("*").Qual(runtimePkg, "Workflow").Block(
		jen.Return(jen.Id("c").Dot("workflow")),
	))

	input := e.p.input.name
	params := []jen.Code{
		jen.Id("ctx").Qual("context", "Context"),
		jen.Id("in").Id(input),
		jen.Id("opts").Op("...").Qual(runtimePkg, "RunOption"),
	}
	encode := func(zero jen.Code) jen.Code {
		return jen.Null().List(jen.Id("raw"), jen.Err()).Op(":=").Qual("encoding/json", "Marshal").Call(jen.Id("in")).Line().
			If(jen.Err().Op("!=").Nil()).Block(jen.Return(zero, jen.Qual("fmt", "Errorf").Call(jen.Lit(fmt.Sprintf("encoding %s input: %%w", w)), jen.Err())))
	}
	e.f.Add(doc(fmt.Sprintf("Run triggers %s %s run and waits until it ends. When the run ends otherwise than completed, the result comes with the error (a *runtime.RunFailedError, or runtime.ErrRunCancelled).", article(w), w)).
		Func().Params(recv.Clone()).Id("Run").Params(params...).Params(jen.Id(e.resultType()), jen.Error()).Block(
		encode(jen.Id(e.resultType()).Values()),
		jen.List(jen.Id("res"), jen.Err()).Op(":=").Id("c").Dot("workflow").Dot("Run").Call(jen.Id("ctx"), jen.Id("raw"), jen.Id("opts").Op("...")),
		jen.Return(jen.Id(e.resultFunc()).Call(jen.Id("res"), jen.Err())),
	))
	e.f.Add(doc(fmt.Sprintf("RunNoWait triggers %s %s run and returns as soon as it is stored; use Wait for its result.", article(w), w)).
		Func().Params(recv.Clone()).Id("RunNoWait").Params(params...).Params(jen.Qual(runtimePkg, "RunRef"), jen.Error()).Block(
		encode(jen.Qual(runtimePkg, "RunRef").Values()),
		jen.Return(jen.Id("c").Dot("workflow").Dot("Trigger").Call(jen.Id("ctx"), jen.Id("raw"), jen.Id("opts").Op("..."))),
	))
	e.f.Add(doc(fmt.Sprintf("RunManyNoWait triggers one %s run per input, all with the same options (runtime.WithIdempotencyKeys gives each input an idempotency key of its own), in one transaction: every input is validated first, and either every run is created or none is. WaitMany waits for them.", w)).
		Func().Params(recv.Clone()).Id("RunManyNoWait").Params(
		jen.Id("ctx").Qual("context", "Context"),
		jen.Id("inputs").Index().Id(input),
		jen.Id("opts").Op("...").Qual(runtimePkg, "RunOption"),
	).Params(jen.Index().Qual(runtimePkg, "RunRef"), jen.Error()).Block(
		jen.Id("raws").Op(":=").Make(jen.Index().Qual("encoding/json", "RawMessage"), jen.Len(jen.Id("inputs"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("in")).Op(":=").Range().Id("inputs")).Block(
			jen.List(jen.Id("raw"), jen.Err()).Op(":=").Qual("encoding/json", "Marshal").Call(jen.Id("in")),
			jen.If(jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(fmt.Sprintf("encoding %s input %%d: %%w", w)), jen.Id("i"), jen.Err())),
			),
			jen.Id("raws").Index(jen.Id("i")).Op("=").Id("raw"),
		),
		jen.Return(jen.Id("c").Dot("workflow").Dot("TriggerMany").Call(jen.Id("ctx"), jen.Id("raws"), jen.Id("opts").Op("..."))),
	))
	e.f.Add(doc(fmt.Sprintf("Wait waits until %s %s run ends and returns its result; see Run.", article(w), w)).
		Func().Params(recv.Clone()).Id("Wait").Params(
		jen.Id("ctx").Qual("context", "Context"), jen.Id("id").Qual(runtimePkg, "RunID"),
	).Params(jen.Id(e.resultType()), jen.Error()).Block(
		jen.List(jen.Id("res"), jen.Err()).Op(":=").Id("c").Dot("workflow").Dot("Wait").Call(jen.Id("ctx"), jen.Id("id")),
		jen.Return(jen.Id(e.resultFunc()).Call(jen.Id("res"), jen.Err())),
	))
	text := fmt.Sprintf("WaitMany waits until every %s run of ids has ended and returns their results in the order of ids; each result's Status and Failure say how its run ended. It costs a few reads per wake-up however many runs it waits for (see runtime.Engine.WaitMany). The error is about waiting, not about how runs ended: the context ended (the runs that had ended have their results, the others only their ID), an id names no run, the store failed, or an output did not decode.", w)
	e.f.Add(doc(text).
		Func().Params(recv.Clone()).Id("WaitMany").Params(
		jen.Id("ctx").Qual("context", "Context"), jen.Id("ids").Index().Qual(runtimePkg, "RunID"),
	).Params(jen.Index().Id(e.resultType()), jen.Error()).Block(
		jen.List(jen.Id("runs"), jen.Err()).Op(":=").Id("c").Dot("workflow").Dot("WaitMany").Call(jen.Id("ctx"), jen.Id("ids")),
		jen.Id("errs").Op(":=").Index().Error().Values(jen.Err()),
		jen.Id("out").Op(":=").Make(jen.Index().Id(e.resultType()), jen.Len(jen.Id("ids"))),
		jen.For(jen.List(jen.Id("i"), jen.Id("id")).Op(":=").Range().Id("ids")).Block(
			jen.Id("out").Index(jen.Id("i")).Dot("ID").Op("=").Id("id"),
			jen.If(jen.Id("i").Op("<").Len(jen.Id("runs")).Op("&&").Id("runs").Index(jen.Id("i")).Op("!=").Nil()).Block(
				jen.Var().Id("decodeErr").Error(),
				jen.List(jen.Id("out").Index(jen.Id("i")), jen.Id("decodeErr")).Op("=").Id(e.resultFunc()).Call(jen.Id("runs").Index(jen.Id("i")), jen.Nil()),
				jen.Id("errs").Op("=").Append(jen.Id("errs"), jen.Id("decodeErr")),
			),
		),
		jen.Return(jen.Id("out"), jen.Qual("errors", "Join").Call(jen.Id("errs").Op("..."))),
	))
	e.events(recv)
	e.schedules(recv, encode)
	text = fmt.Sprintf("Result returns the current state of %s %s run without waiting for it to end. Status says whether it is still running and Steps how far each step got; the output of a step that has not completed (not yet, or not at all) is nil. The error is about reading the run (runtime.ErrRunNotFound for an unknown id or a run of another workflow) or decoding an output, never about how the run ended: Wait returns that.", article(w), w)
	e.f.Add(doc(text).
		Func().Params(recv.Clone()).Id("Result").Params(
		jen.Id("ctx").Qual("context", "Context"), jen.Id("id").Qual(runtimePkg, "RunID"),
	).Params(jen.Id(e.resultType()), jen.Error()).Block(
		jen.List(jen.Id("res"), jen.Err()).Op(":=").Id("c").Dot("workflow").Dot("Result").Call(jen.Id("ctx"), jen.Id("id")),
		jen.Return(jen.Id(e.resultFunc()).Call(jen.Id("res"), jen.Err())),
	))
}

// events renders the client's methods that send events: Signal<Event>
// to a run, and Send<Event> by key for an event some wait has a key for.
func (e *emitter) events(recv *jen.Statement) {
	w := e.p.w.Name
	ctx := jen.Id("ctx").Qual("context", "Context")
	opts := jen.Id("opts").Op("...").Qual(runtimePkg, "RunOption")
	for _, ep := range e.p.events {
		name, payload := ep.event.Name, ep.payload.name
		encode := func(zero ...jen.Code) jen.Code {
			return jen.Null().List(jen.Id("raw"), jen.Err()).Op(":=").Qual("encoding/json", "Marshal").Call(jen.Id("payload")).Line().
				If(jen.Err().Op("!=").Nil()).Block(jen.Return(append(zero, jen.Qual("fmt", "Errorf").Call(jen.Lit(fmt.Sprintf("encoding event %s: %%w", name)), jen.Err()))...))
		}
		text := fmt.Sprintf("Signal%s sends event %s to run id: its steps waiting for %s receive payload, now or when they begin to wait. An id that names no %s run is refused with runtime.ErrRunNotFound, a payload its schema refuses with a *runtime.EventError. runtime.WithTx sends it in the caller's transaction (on Postgres).", ep.goName, name, name, w)
		e.f.Add(doc(text).
			Func().Params(recv.Clone()).Id("Signal"+ep.goName).Params(
			ctx.Clone(), jen.Id("id").Qual(runtimePkg, "RunID"), jen.Id("payload").Id(payload), opts.Clone(),
		).Error().Block(
			encode(),
			jen.List(jen.Id("_"), jen.Err()).Op("=").Id("c").Dot("workflow").Dot("Signal").Call(jen.Id("ctx"), jen.Id("id"), jen.Lit(name), jen.Id("raw"), jen.Id("opts").Op("...")),
			jen.Return(jen.Err()),
		))
		if !ep.keyed {
			continue
		}
		text = fmt.Sprintf("Send%s sends event %s with key: the steps waiting for %s with that key, in %s runs of the tenant (runtime.WithTenant; the default otherwise) created before it, receive payload, now or when they begin to wait. It returns how many waiting steps it woke. A payload its schema refuses is refused with a *runtime.EventError. runtime.WithTx sends it in the caller's transaction (on Postgres).", ep.goName, name, name, w)
		e.f.Add(doc(text).
			Func().Params(recv.Clone()).Id("Send"+ep.goName).Params(
			ctx.Clone(), jen.Id("key").String(), jen.Id("payload").Id(payload), opts.Clone(),
		).Params(jen.Int(), jen.Error()).Block(
			encode(jen.Lit(0)),
			jen.Return(jen.Id("c").Dot("workflow").Dot("Send").Call(jen.Id("ctx"), jen.Lit(name), jen.Id("key"), jen.Id("raw"), jen.Id("opts").Op("..."))),
		))
	}
}

// schedules renders the client's methods for the schedules created at run
// time: CreateSchedule takes the typed input; the others hand over to the
// runtime's Workflow.
func (e *emitter) schedules(recv *jen.Statement, encode func(zero jen.Code) jen.Code) {
	w := e.p.w.Name
	schedule := jen.Qual(runtimePkg, "Schedule")
	ctx := jen.Id("ctx").Qual("context", "Context")
	text := fmt.Sprintf("CreateSchedule creates a cron schedule that starts a %s run with input at each tick of cron (five fields, or a descriptor such as @hourly or @every 15m), in UTC unless runtime.WithTimezone says otherwise, for the default tenant unless runtime.WithScheduleTenant says otherwise. The store keeps it, and every started engine that registered the workflow fires it, each tick starting one run. Creating a schedule that exists with the same settings changes nothing; with other settings, it updates it. A bad name, cron expression, time zone or input is refused with a *runtime.ScheduleError. See runtime.Workflow.CreateSchedule.", w)
	e.f.Add(doc(text).
		Func().Params(recv.Clone()).Id("CreateSchedule").Params(
		ctx.Clone(), jen.List(jen.Id("name"), jen.Id("cron")).String(), jen.Id("in").Id(e.p.input.name),
		jen.Id("opts").Op("...").Qual(runtimePkg, "ScheduleOption"),
	).Params(schedule.Clone(), jen.Error()).Block(
		encode(schedule.Clone().Values()),
		jen.Return(jen.Id("c").Dot("workflow").Dot("CreateSchedule").Call(jen.Id("ctx"), jen.Id("name"), jen.Id("cron"), jen.Id("raw"), jen.Id("opts").Op("..."))),
	))
	e.f.Add(doc(fmt.Sprintf("Schedules returns the %s schedules created at run time, by name (those of the workflow file are in its spec).", w)).
		Func().Params(recv.Clone()).Id("Schedules").Params(ctx.Clone()).Params(jen.Index().Add(schedule.Clone()), jen.Error()).Block(
		jen.Return(jen.Id("c").Dot("workflow").Dot("Schedules").Call(jen.Id("ctx"))),
	))
	e.f.Add(doc("DeleteSchedule deletes a schedule created at run time (runtime.ErrScheduleNotFound when there is none); the runs it started are left as they are.").
		Func().Params(recv.Clone()).Id("DeleteSchedule").Params(ctx.Clone(), jen.Id("name").String()).Error().Block(
		jen.Return(jen.Id("c").Dot("workflow").Dot("DeleteSchedule").Call(jen.Id("ctx"), jen.Id("name"))),
	))
	for _, m := range []struct{ name, text string }{
		{"PauseSchedule", "PauseSchedule pauses a schedule created at run time: it starts no run until resumed."},
		{"ResumeSchedule", "ResumeSchedule resumes a paused schedule; the ticks that came while it was paused are not fired."},
	} {
		e.f.Add(doc(m.text).
			Func().Params(recv.Clone()).Id(m.name).Params(ctx.Clone(), jen.Id("name").String()).Params(schedule.Clone(), jen.Error()).Block(
			jen.Return(jen.Id("c").Dot("workflow").Dot(m.name).Call(jen.Id("ctx"), jen.Id("name"))),
		))
	}
}
