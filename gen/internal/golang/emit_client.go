package golang

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

func (e *emitter) resultType() string { return e.w + "Result" }
func (e *emitter) clientType() string { return e.w + "Client" }
func (e *emitter) resultFunc() string { return unexported(e.w) + "Result" }

// runtimeClient is runtime.Client[<W>Input, <W>Result], the generic client
// that <W>Client is (or embeds, when the workflow has events).
func (e *emitter) runtimeClient() *jen.Statement {
	return jen.Qual(runtimePkg, "Client").Types(jen.Id(e.p.input.name), jen.Id(e.resultType()))
}

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
// outputs and step statuses) and <w>Result, the function that decodes it
// from a runtime.RunResult, which the runtime's generic client calls. It
// reads every status and output through <W>Refs (StepRef.Status, and
// runtime.DecodeOutput, which is runtime.Output), the path users' code
// takes too, and names no step as a string.
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
		jen.Id("out").Op(":=").Id(name).Add(multi(
			kv("ID", jen.Id("res").Dot("ID")),
			kv("Status", jen.Id("res").Dot("Status")),
			kv("Steps", jen.Id(statuses).Add(multi(statusValues...))),
			kv("Failure", jen.Id("res").Dot("Failure")),
		)),
	}
	outputs := e.withOutput()
	if len(outputs) == 0 {
		body = append(body, jen.Return(jen.Id("out"), jen.Nil()))
	} else {
		body = append(body, jen.Var().Id("errs").Index().Error())
		for _, s := range outputs {
			body = append(body, jen.Id("out").Dot(s.goName).Op("=").Qual(runtimePkg, "DecodeOutput").Call(
				jen.Id("res"), e.refOf(s.goName), jen.Op("&").Id("errs")))
		}
		body = append(body, jen.Return(jen.Id("out"), jen.Qual("errors", "Join").Call(jen.Id("errs").Op("..."))))
	}
	text = fmt.Sprintf("%s decodes %s %s from the state of a run, for %s; the error names each output that does not decode.", e.resultFunc(), article(name), name, e.clientType())
	e.f.Add(doc(text).
		Func().Id(e.resultFunc()).Params(
		jen.Id("res").Op("*").Qual(runtimePkg, "RunResult"),
	).Params(jen.Id(name), jen.Error()).Block(body...))
}

// client renders <W>Client and the functions that make one. The client is
// the runtime's generic client: an alias of it, or, for a workflow with
// events, a struct that embeds it and adds a typed method per event.
func (e *emitter) client() {
	w, name, client := e.p.w.Name, e.w, e.clientType()
	text := fmt.Sprintf("%s triggers %s runs, waits for them and reads their results as %s, and manages its schedules created at run time: see runtime.Client for its methods.", client, w, e.resultType())
	if len(e.p.events) == 0 {
		e.f.Add(doc(text).Type().Id(client).Op("=").Add(e.runtimeClient()))
	} else {
		text += " It sends the workflow's events too."
		e.f.Add(doc(text).Type().Id(client).Struct(jen.Op("*").Add(e.runtimeClient())))
	}

	spec := jen.Id(name + "Spec").Call()
	ret := func(call jen.Code) []jen.Code {
		made := jen.Qual(runtimePkg, "NewClient").Types(jen.Id(e.p.input.name)).Call(jen.Id("w"), jen.Id(e.resultFunc()))
		if len(e.p.events) > 0 {
			made = jen.Op("&").Id(client).Values(kv("Client", made))
		}
		return []jen.Code{
			jen.List(jen.Id("w"), jen.Err()).Op(":=").Add(call),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.Return(made, jen.Nil()),
		}
	}
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

	former := register + "Former"
	e.f.Add(doc(fmt.Sprintf("%s registers steps as the code of this version of the %s workflow kept as a former version on e, beside the current version registered with the Register function of its own package: e runs the runs of this version still in flight, and starts none (see runtime.Engine.RegisterFormer).", former, w)).
		Func().Id(former).Params(
		jen.Id("e").Op("*").Qual(runtimePkg, "Engine"), jen.Id("steps").Id(name+"Steps"),
	).Error().Block(
		jen.If(jen.Id("steps").Op("==").Nil()).Block(
			jen.Return(jen.Qual("errors", "New").Call(jen.Lit(former+": steps is nil"))),
		),
		jen.Return(jen.Id("e").Dot("RegisterFormer").Call(spec.Clone(), jen.Qual(runtimePkg, "Handlers").Add(multi(handlers...)))),
	))

	e.events()
}

// events renders the client's methods that send events: Signal<Event>
// to a run, Publish<Event> for an event the workflow starts on, and
// Send<Event> by key for an event some wait has a key for.
// Each takes the event's payload type and hands over to the runtime.
func (e *emitter) events() {
	w := e.p.w.Name
	recv := jen.Id("c").Op("*").Id(e.clientType())
	ctx := jen.Id("ctx").Qual("context", "Context")
	opts := jen.Id("opts").Op("...").Qual(runtimePkg, "RunOption")
	workflow := jen.Id("c").Dot("Workflow").Call()
	for _, ep := range e.p.events {
		name, payload := ep.event.Name, ep.payload.name
		text := fmt.Sprintf("Signal%s sends event %s to run id: its steps waiting for %s receive payload, now or when they begin to wait. An id that names no %s run is refused with runtime.ErrRunNotFound, a payload its schema refuses with a *runtime.EventError. runtime.WithTx sends it in the caller's transaction (on Postgres).", ep.goName, name, name, w)
		e.f.Add(doc(text).
			Func().Params(recv.Clone()).Id("Signal"+ep.goName).Params(
			ctx.Clone(), jen.Id("id").Qual(runtimePkg, "RunID"), jen.Id("payload").Id(payload), opts.Clone(),
		).Error().Block(
			jen.Return(jen.Qual(runtimePkg, "SignalEvent").Call(jen.Id("ctx"), workflow.Clone(), jen.Id("id"), jen.Lit(name), jen.Id("payload"), jen.Id("opts").Op("..."))),
		))
		if ep.starts {
			text = fmt.Sprintf("Publish%s publishes event %s: it starts a run of every workflow that starts on %s (%s and others, by their startOn) whose filter matches payload and, with runtime.WithEventKey, delivers it with that key to the steps that wait for it by key, in every workflow. With an id, publishing is idempotent: the same id again starts and delivers nothing new. runtime.WithTenant sets the tenant, runtime.WithTx does it all in the caller's transaction (on Postgres). See runtime.Engine.PublishEvent.", ep.goName, name, name, w)
			e.f.Add(doc(text).
				Func().Params(recv.Clone()).Id("Publish"+ep.goName).Params(
				ctx.Clone(), jen.Id("id").String(), jen.Id("payload").Id(payload), opts.Clone(),
			).Params(jen.Qual(runtimePkg, "Published"), jen.Error()).Block(
				jen.Return(jen.Qual(runtimePkg, "PublishEvent").Call(jen.Id("ctx"), workflow.Clone(), jen.Lit(name), jen.Id("id"), jen.Id("payload"), jen.Id("opts").Op("..."))),
			))
		}
		if !ep.keyed {
			continue
		}
		text = fmt.Sprintf("Send%s sends event %s with key: the steps waiting for %s with that key, in %s runs of the tenant (runtime.WithTenant; the default otherwise) created before it, receive payload, now or when they begin to wait. It returns how many waiting steps it woke. A payload its schema refuses is refused with a *runtime.EventError. runtime.WithTx sends it in the caller's transaction (on Postgres).", ep.goName, name, name, w)
		e.f.Add(doc(text).
			Func().Params(recv.Clone()).Id("Send"+ep.goName).Params(
			ctx.Clone(), jen.Id("key").String(), jen.Id("payload").Id(payload), opts.Clone(),
		).Params(jen.Int(), jen.Error()).Block(
			jen.Return(jen.Qual(runtimePkg, "SendEvent").Call(jen.Id("ctx"), workflow.Clone(), jen.Lit(name), jen.Id("key"), jen.Id("payload"), jen.Id("opts").Op("..."))),
		))
	}
}
