package workflow

import (
	"path/filepath"

	"github.com/effectivelabs/trellis/runtime/spec"
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
	for _, s := range w.Steps {
		step := spec.Step{Name: s.Name, Sleep: s.Sleep}
		for _, ref := range s.Parents {
			step.Parents = append(step.Parents, ref.Name)
		}
		for _, c := range s.SkipIf {
			step.SkipIf = append(step.SkipIf, c.Source)
		}
		if !s.IsSleep() {
			step.Retry, step.Timeout = s.Retry, s.Timeout
			if s.Output != nil {
				step.OutputSchema = s.Output.JSON
			}
		}
		out.Steps = append(out.Steps, step)
	}
	if h := w.OnFailure; h != nil {
		out.OnFailure = &spec.OnFailure{Name: h.Name, Retry: h.Retry, Timeout: h.Timeout}
	}
	return out
}
