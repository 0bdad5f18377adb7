package workflow

import (
	"fmt"
	"strings"

	"github.com/effectivelabs/trellis/internal/suggest"
	"github.com/effectivelabs/trellis/schema/spec"
)

// check applies the rules of the workflow model (spec.Workflow.Check, the
// very rules the runtime applies) and reports each problem at the value it
// is about, with what only the file knows added: the line of a first
// declaration, a guess at a misspelt parent. It then records which steps
// may be skipped.
//
// Names were already checked while decoding (with spec.CheckName), and
// an invalid name was reported there and left empty; the name problems
// Check finds again are not reported twice.
func (d *decoder) check(w *Workflow) {
	ws := w.Spec()
	var names []string
	for _, s := range w.Steps {
		if s.Name != "" {
			names = append(names, s.Name)
		}
	}
	for _, p := range ws.Check() {
		var step *Step
		if p.Step >= 0 {
			step = w.Steps[p.Step]
		}
		switch p.Rule {
		case spec.RuleName:
			continue
		case spec.RuleDuplicateStep:
			d.probs.Add(step.Pos, "", "step name %q is used twice (first at line %d); step names must be unique", step.Name, w.Steps[p.Other].Pos.Line)
		case spec.RuleHandlerName:
			d.probs.Add(w.OnFailure.Pos, "", "onFailure name %q is also the name of a step (line %d); give the failure handler a name of its own", w.OnFailure.Name, w.Steps[p.Other].Pos.Line)
		case spec.RuleUnknownParent:
			ref := step.Parents[p.Index]
			d.probs.Add(ref.Pos, "", "%s: %s%s", step.label, p.Message, parentHint(ref.Name, names))
		case spec.RuleSelfParent, spec.RuleHandlerParent, spec.RuleRepeatParent:
			d.probs.Add(step.Parents[p.Index].Pos, "", "%s: %s", step.label, p.Message)
		case spec.RuleCycle:
			pos := step.Pos
			if p.Index >= 0 {
				pos = step.Parents[p.Index].Pos
			}
			d.probs.Add(pos, "", "%s", p.Message)
		case spec.RuleSchedule:
			sc := w.Schedules[p.Index]
			if sc.Name == "" || sc.Cron == "" {
				continue // the decoder reported it, where it is written
			}
			d.probs.Add(sc.Pos, "", "%s", p.Message)
		case spec.RuleKind, spec.RuleRunLimit, spec.RuleRunsOn:
			continue // the decoder reported it, where it is written
		case spec.RuleDebounce:
			if strings.HasPrefix(p.Message, "debounce and runConcurrency") {
				d.probs.Add(w.Debounce.Pos, "", "%s", p.Message)
			}
			continue // the decoder reported the others, where they are written
		case spec.RuleWait:
			pos := step.Pos
			if w := step.WaitFor; w != nil {
				pos = w.EventPos
				switch {
				case p.Field == "timeout":
					continue // the decoder reported it
				case strings.HasPrefix(p.Message, "onTimeout"):
					pos = w.OnTimeoutPos
				case strings.HasPrefix(p.Message, "timeout"):
					pos = w.Pos
				}
			}
			hint := ""
			if strings.Contains(p.Message, "is not declared") {
				hint = eventHint(step, w)
			}
			d.probs.Add(pos, "", "%s: %s%s", step.label, p.Message, hint)
		case spec.RuleChild:
			pos := step.Pos
			if step.Child != nil {
				pos = step.Child.NamePos
			}
			d.probs.Add(pos, "", "%s: %s", step.label, p.Message)
		case spec.RuleEvent:
			if p.Index < len(w.Events) && w.Events[p.Index].Name != "" {
				d.probs.Add(w.Events[p.Index].Pos, "", "%s", p.Message)
			}
		case spec.RuleStartOn:
			st := w.StartOn[p.Index]
			hint := ""
			if strings.Contains(p.Message, "is not declared") {
				hint = startOnHint(st, w)
			}
			d.probs.Add(st.EventPos, "", "startOn[%d]: %s%s", p.Index, p.Message, hint)
		case spec.RuleRetry:
			if step != nil {
				d.retryProblem(p, step.retry, d.defaults)
			} else {
				d.retryProblem(p, w.OnFailure.retry, d.defaults)
			}
		default:
			pos, what := w.NamePos, "workflow"
			switch {
			case step != nil:
				pos, what = step.Pos, step.label
			case p.Handler:
				pos, what = w.OnFailure.Pos, "onFailure"
			}
			d.probs.Add(pos, "", "%s: %s: %s", what, p.Field, p.Message)
		}
	}
	for i, may := range ws.MaySkip() {
		w.Steps[i].MaySkip = may
	}
}

// eventHint guesses the event a wait step meant.
func eventHint(step *Step, w *Workflow) string {
	if step.WaitFor == nil {
		return ""
	}
	var names []string
	for _, ev := range w.Events {
		names = append(names, ev.Name)
	}
	if guess := suggest.Closest(step.WaitFor.Event, names); guess != "" {
		return fmt.Sprintf("; did you mean %q?", guess)
	}
	return ""
}

func parentHint(name string, steps []string) string {
	if guess := suggest.Closest(name, steps); guess != "" {
		return fmt.Sprintf("; did you mean %q?", guess)
	}
	if len(steps) == 0 {
		return ""
	}
	return fmt.Sprintf(" (steps: %s)", strings.Join(steps, ", "))
}
