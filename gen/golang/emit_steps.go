package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
)

// codeSteps are the steps that run code: all but sleep steps.
func (e *emitter) codeSteps() []*stepPlan {
	var out []*stepPlan
	for _, s := range e.p.steps {
		if !s.step.IsSleep() {
			out = append(out, s)
		}
	}
	return out
}

func (e *emitter) parentsType(s *stepPlan) string { return e.w + s.goName + "Parents" }

func (e *emitter) outputType(s *stepPlan) string { return s.output.name }

// parentTypes declares, for every code step with parents, the struct that
// carries exactly its parents' outputs. A parent that may be skipped is a
// pointer (nil when skipped); one that cannot is a value; a parent
// without output is a bool telling whether it completed.
func (e *emitter) parentTypes() {
	for _, s := range e.codeSteps() {
		if len(s.parents) == 0 {
			continue
		}
		fields := make([]jen.Code, 0, len(s.parents))
		for _, p := range s.parents {
			var text string
			var typ jen.Code
			switch {
			case p.output == nil && p.optional:
				text = fmt.Sprintf("%s is true when step %s completed, false when it was skipped.", p.goName, p.name)
				typ = jen.Bool()
			case p.output == nil:
				text = fmt.Sprintf("%s is true when step %s completed; it cannot be skipped, so it always is.", p.goName, p.name)
				typ = jen.Bool()
			case p.optional:
				text = fmt.Sprintf("%s is the output of step %s; nil when %s was skipped.", p.goName, p.name, p.name)
				typ = jen.Op("*").Id(p.output.name)
			default:
				text = fmt.Sprintf("%s is the output of step %s, which cannot be skipped.", p.goName, p.name)
				typ = jen.Id(p.output.name)
			}
			fields = append(fields, doc(text).Id(p.goName).Add(typ))
		}
		text := fmt.Sprintf("%s holds what step %s receives from its parents.", e.parentsType(s), s.step.Name)
		e.f.Add(doc(text).Type().Id(e.parentsType(s)).Struct(fields...))
	}
}

// stepsInterface declares the interface users implement: one method per
// code step, and one for the failure handler. A step added to the file
// adds a method, so an implementation that lacks it no longer compiles.
func (e *emitter) stepsInterface() {
	name := e.w + "Steps"
	var methods []jen.Code
	for _, s := range e.codeSteps() {
		text := fmt.Sprintf("%s runs step %s.", s.goName, s.step.Name)
		if len(s.step.SkipIf) > 0 {
			conds := make([]string, len(s.step.SkipIf))
			for i, c := range s.step.SkipIf {
				conds[i] = strings.Join(strings.Fields(c.Source), " ")
			}
			text += " It is skipped when " + strings.Join(conds, ", or when ") + "."
		}
		methods = append(methods, doc(text).Id(s.goName).Params(e.stepParams(s)...).Add(e.stepResults(s)))
	}
	if h := e.p.w.OnFailure; h != nil {
		text := fmt.Sprintf("%s runs once when %s %s run fails, with the failed step's name and error.", e.p.onFailure, article(e.p.w.Name), e.p.w.Name)
		methods = append(methods, doc(text).Id(e.p.onFailure).Params(
			jen.Id("ctx").Qual("context", "Context"),
			jen.Id("in").Id(e.p.input.name),
			jen.Id("failure").Qual(runtimePkg, "Failure"),
		).Error())
	}
	text := fmt.Sprintf("%s is the code of the %s workflow: one method per step that runs code", name, e.p.w.Name)
	if e.p.w.OnFailure != nil {
		text += ", and one for the failure handler"
	}
	text += fmt.Sprintf(". Pass an implementation to Register%s.", e.w)
	if d := e.p.w.Description; d != "" {
		text += "\n\n" + d
	}
	e.f.Add(doc(text).Type().Id(name).Interface(methods...))
}

func (e *emitter) stepParams(s *stepPlan) []jen.Code {
	params := []jen.Code{jen.Id("ctx").Qual("context", "Context"), jen.Id("in").Id(e.p.input.name)}
	if len(s.parents) > 0 {
		params = append(params, jen.Id("parents").Id(e.parentsType(s)))
	}
	return params
}

func (e *emitter) stepResults(s *stepPlan) jen.Code {
	if s.output == nil {
		return jen.Error()
	}
	return jen.Parens(jen.List(jen.Id(e.outputType(s)), jen.Error()))
}

// adapter renders the runtime.StepFunc that decodes a step's input and
// parents, calls the typed method and encodes its output. Input and
// parent outputs that do not decode are not retried: the same bytes
// would fail again.
func (e *emitter) adapter(s *stepPlan) jen.Code {
	body := []jen.Code{e.decodeInput(jen.Nil())}
	args := []jen.Code{jen.Id("ctx"), jen.Id("in")}
	if len(s.parents) > 0 {
		body = append(body, jen.Var().Id("parents").Id(e.parentsType(s)))
		for _, p := range s.parents {
			body = append(body, decodeParent(p))
		}
		args = append(args, jen.Id("parents"))
	}
	call := jen.Id("steps").Dot(s.goName).Call(args...)
	if s.output == nil {
		body = append(body, jen.Return(jen.Nil(), call))
	} else {
		body = append(body,
			jen.List(jen.Id("out"), jen.Err()).Op(":=").Add(call),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.Return(jen.Qual("encoding/json", "Marshal").Call(jen.Id("out"))),
		)
	}
	return jen.Func().Params(
		jen.Id("ctx").Qual("context", "Context"),
		jen.Id("req").Op("*").Qual(runtimePkg, "StepRequest"),
	).Params(jen.Qual("encoding/json", "RawMessage"), jen.Error()).Block(body...)
}

// decodeInput renders the decoding of req.Input into in. results are the
// values returned before the error (nil, for a StepFunc).
func (e *emitter) decodeInput(results ...jen.Code) jen.Code {
	fail := jen.Qual(runtimePkg, "NonRetryable").Call(
		jen.Qual("fmt", "Errorf").Call(jen.Lit(fmt.Sprintf("decoding %s input: %%w", e.p.w.Name)), jen.Err()))
	return jen.Null().
		Var().Id("in").Id(e.p.input.name).Line().
		If(jen.Err().Op(":=").Qual("encoding/json", "Unmarshal").Call(jen.Id("req").Dot("Input"), jen.Op("&").Id("in")), jen.Err().Op("!=").Nil()).
		Block(jen.Return(append(results, fail)...))
}

func decodeParent(p parentPlan) jen.Code {
	get := jen.Id("req").Dot("Parent").Call(jen.Lit(p.name))
	field := jen.Id("parents").Dot(p.goName)
	decodeErr := jen.Return(jen.Nil(), jen.Qual(runtimePkg, "NonRetryable").Call(
		jen.Qual("fmt", "Errorf").Call(jen.Lit(fmt.Sprintf("decoding output of %s: %%w", p.name)), jen.Err())))
	switch {
	case p.output == nil:
		return jen.List(jen.Id("_"), field).Op("=").Add(get)
	case p.optional:
		return jen.If(jen.List(jen.Id("raw"), jen.Id("ok")).Op(":=").Add(get), jen.Id("ok")).Block(
			field.Clone().Op("=").New(jen.Id(p.output.name)),
			jen.If(jen.Err().Op(":=").Qual("encoding/json", "Unmarshal").Call(jen.Id("raw"), field.Clone()), jen.Err().Op("!=").Nil()).Block(decodeErr),
		)
	}
	missing := fmt.Sprintf("step %s did not complete, though it cannot be skipped", p.name)
	return jen.If(jen.List(jen.Id("raw"), jen.Id("ok")).Op(":=").Add(get), jen.Op("!").Id("ok")).Block(
		jen.Return(jen.Nil(), jen.Qual(runtimePkg, "NonRetryable").Call(jen.Qual("errors", "New").Call(jen.Lit(missing)))),
	).Else().If(jen.Err().Op(":=").Qual("encoding/json", "Unmarshal").Call(jen.Id("raw"), jen.Op("&").Add(field.Clone())), jen.Err().Op("!=").Nil()).Block(decodeErr)
}
