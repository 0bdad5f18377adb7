package runtime

import "github.com/effectivelabs/trellis/schema/spec"

// stepLabels returns the worker labels each task of a run of w needs, by
// step index (the failure handler's last), in their stored form
// (spec.LabelList); nil when no step needs any.
func stepLabels(w *WorkflowSpec) [][]string {
	var out [][]string
	set := func(i, n int, labels map[string]string) {
		if len(labels) == 0 {
			return
		}
		if out == nil {
			out = make([][]string, n)
		}
		out[i] = spec.LabelList(labels)
	}
	n := len(w.Steps)
	if w.OnFailure != nil {
		n++
	}
	for i := range w.Steps {
		set(i, n, w.Steps[i].RunsOn)
	}
	if w.OnFailure != nil {
		set(len(w.Steps), n, w.OnFailure.RunsOn)
	}
	return out
}

// labels returns the worker labels the task of step index i needs.
func (d *Definition) labels(i int) []string {
	if i < len(d.stepLabels) {
		return d.stepLabels[i]
	}
	return nil
}
