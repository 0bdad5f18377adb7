package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
)

// codeSteps are the steps that run code: all but sleep and wait steps,
// and child workflow steps whose input expressions build.
func (e *emitter) codeSteps() []*stepPlan {
	var out []*stepPlan
	for _, s := range e.p.steps {
		if s.step.RunsCode() {
			out = append(out, s)
		}
	}
	return out
}

func (e *emitter) parentsType(s *stepPlan) string { return e.w + s.goName + "Parents" }

func (e *emitter) outputType(s *stepPlan) string { return s.output.name }

// parentTypes declares, for every code step with parents, the struct that
// carries exactly its parents' outputs. A parent that may be skipped is a
// pointer (nil when skipped), unless it is the step's only parent: a step
// whose parents are all skipped is skipped, so an only parent has always
// completed and is a value, as is a parent that cannot be skipped. A
// parent without output is a bool telling whether it completed. Each field is
// tagged with its parent's name, which the runtime adapters decode by.
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
			case p.output == nil && p.maySkip:
				text = fmt.Sprintf("%s is true when step %s completed, which it always has: when it is skipped, so is %s.", p.goName, p.name, s.step.Name)
				typ = jen.Bool()
			case p.output == nil:
				text = fmt.Sprintf("%s is true when step %s completed; it cannot be skipped, so it always is.", p.goName, p.name)
				typ = jen.Bool()
			case p.optional:
				text = fmt.Sprintf("%s is the output of step %s; nil when %s was skipped.", p.goName, p.name, p.name)
				typ = jen.Op("*").Add(resultOf(p.output, p.list))
			case p.maySkip:
				text = fmt.Sprintf("%s is the output of step %s, which has always completed: when it is skipped, so is %s.", p.goName, p.name, s.step.Name)
				typ = resultOf(p.output, p.list)
			default:
				text = fmt.Sprintf("%s is the output of step %s, which cannot be skipped.", p.goName, p.name)
				typ = resultOf(p.output, p.list)
			}
			fields = append(fields, doc(text).Id(p.goName).Add(typ).Tag(map[string]string{"trellis": p.name}))
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
		if s.childInput != nil {
			text = fmt.Sprintf("%s runs step %s: it returns the input of the %s run the step starts.", s.goName, s.step.Name, s.step.Child.Name)
		}
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
	if s.item != nil {
		return []jen.Code{jen.Id("ctx").Qual("context", "Context"), jen.Id("item").Id(s.item.name)}
	}
	params := []jen.Code{jen.Id("ctx").Qual("context", "Context"), jen.Id("in").Id(e.p.input.name)}
	if len(s.parents) > 0 {
		params = append(params, jen.Id("parents").Id(e.parentsType(s)))
	}
	return params
}

func (e *emitter) stepResults(s *stepPlan) jen.Code {
	if s.childInput != nil {
		return jen.Parens(jen.List(jen.Id(s.childInput.name), jen.Error()))
	}
	if s.output == nil {
		return jen.Error()
	}
	return jen.Parens(jen.List(jen.Id(e.outputType(s)), jen.Error()))
}

// adapter renders the runtime.StepFunc of a step: a runtime adapter
// (runtime.Step and its variants) around the typed method. The adapter
// decodes the input and the parents struct (from its trellis tags), calls
// the method and encodes its output; input and parent outputs that do not
// decode are not retried.
func (e *emitter) adapter(s *stepPlan) jen.Code {
	name := "Step"
	if len(s.parents) == 0 || s.step.IsMap() {
		name = "RootStep" // a map step's code gets its item, not the run's input and parents
	}
	if s.output == nil && s.childInput == nil {
		name += "NoOutput"
	}
	return jen.Qual(runtimePkg, name).Call(jen.Id("steps").Dot(s.goName))
}
