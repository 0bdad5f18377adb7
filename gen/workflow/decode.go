package workflow

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime/spec"
)

// decoder turns the Value tree into a Workflow, reporting every value that
// has the wrong shape. Each check uses the position and rule the format
// schema uses for the same finding (see Problem).
type decoder struct {
	probs    *Problems
	src      []byte
	defaults retryOverride
	timeout  time.Duration // defaults.timeout
}

func (d *decoder) lines() [][]byte { return bytes.Split(d.src, []byte("\n")) }

func (d *decoder) workflow(root *Value) *Workflow {
	w := &Workflow{}
	d.keys(root, "the workflow", "name", "description", "input", "defaults", "steps", "onFailure")
	if f := d.required(root, "name", "missing name: give the workflow a name such as order-processing"); f != nil {
		w.Name, w.NamePos = d.name(f.Value, "workflow name"), f.Value.Pos
	}
	if f := root.Get("description"); f != nil {
		w.Description = strings.TrimRight(d.str(f.Value, "description"), "\n")
	}
	if f := d.required(root, "input", "missing input: declare the JSON Schema of the run input, such as input: {type: object, properties: {...}}"); f != nil {
		w.Input = d.schema(f.Value, "input")
	}
	if f := root.Get("defaults"); f != nil {
		d.decodeDefaults(f.Value)
	}
	if f := d.required(root, "steps", "missing steps: declare at least one step"); f != nil {
		w.Steps = d.steps(f.Value)
	}
	if f := root.Get("onFailure"); f != nil {
		w.OnFailure = d.onFailure(f.Value)
	}
	return w
}

func (d *decoder) decodeDefaults(v *Value) {
	if !d.isMap(v, "defaults", "a mapping with retry and timeout") {
		return
	}
	d.keys(v, "defaults", "retry", "timeout")
	if f := v.Get("retry"); f != nil {
		d.defaults = d.retry(f.Value, "defaults.retry", "")
	}
	if f := v.Get("timeout"); f != nil {
		d.timeout = d.duration(f.Value, "defaults.timeout")
	}
}

func (d *decoder) steps(v *Value) []*Step {
	if v.Kind != KindList {
		d.probs.Add(v.Pos, "type", "steps must be a list of steps (each item starting with '- name: ...'), not %s", v.Kind)
		return nil
	}
	if len(v.Items) == 0 {
		d.probs.Add(v.Pos, "minItems", "steps is empty: declare at least one step")
		return nil
	}
	out := make([]*Step, 0, len(v.Items))
	for i, item := range v.Items {
		if s := d.step(item, i); s != nil {
			out = append(out, s)
		}
	}
	return out
}

func (d *decoder) step(v *Value, index int) *Step {
	if !d.isMap(v, fmt.Sprintf("steps[%d]", index), "a mapping such as {name: charge, parents: [validate]}") {
		return nil
	}
	s := &Step{Pos: v.Pos}
	what := fmt.Sprintf("steps[%d]", index)
	if f := d.required(v, "name", fmt.Sprintf("%s has no name: add name: <step-name>", what)); f != nil {
		if s.Name = d.name(f.Value, "step name"); s.Name != "" {
			what = fmt.Sprintf("step %q", s.Name)
		}
		s.Pos = f.Value.Pos
	}
	s.label = what
	d.keys(v, what, "name", "parents", "skipIf", "sleep", "retry", "timeout", "output")
	if f := v.Get("parents"); f != nil {
		s.Parents = d.parents(f.Value, what)
	}
	if f := v.Get("skipIf"); f != nil {
		s.SkipIf = d.skipIf(f.Value, what)
	}
	if f := v.Get("sleep"); f != nil {
		s.Sleep = d.duration(f.Value, "sleep of "+what)
		for _, key := range []string{"retry", "timeout", "output"} {
			if code := v.Get(key); code != nil {
				d.probs.Add(code.KeyPos, "false", "sleep step %s cannot have %s: a sleep step runs no code and takes only name, parents and skipIf; remove %s, or remove sleep to make it a code step", nameOr(s.Name, what), key, key)
			}
		}
		if s.Sleep > 0 {
			return s
		}
	}
	if f := v.Get("retry"); f != nil {
		s.retry = d.retry(f.Value, "retry", what)
	}
	s.Retry = s.retry.over(d.defaults).apply(spec.DefaultRetryPolicy())
	s.Timeout = d.timeout
	if f := v.Get("timeout"); f != nil {
		s.Timeout = d.duration(f.Value, "timeout of "+what)
	}
	if f := v.Get("output"); f != nil {
		s.Output = d.schema(f.Value, "output of "+what)
	}
	return s
}

func nameOr(name, what string) string {
	if name != "" {
		return fmt.Sprintf("%q", name)
	}
	return what
}

func (d *decoder) parents(v *Value, what string) []Ref {
	if v.Kind != KindList {
		d.probs.Add(v.Pos, "type", "parents of %s must be a list of step names, such as parents: [validate], not %s", what, v.Kind)
		return nil
	}
	var out []Ref
	seen := map[string]bool{}
	for _, item := range v.Items {
		name := d.name(item, "parent name")
		if name == "" {
			continue
		}
		if seen[name] {
			d.probs.Add(item.Pos, "uniqueItems", "%s lists parent %q twice; remove one", what, name)
			continue
		}
		seen[name] = true
		out = append(out, Ref{Name: name, Pos: item.Pos})
	}
	return out
}

func (d *decoder) skipIf(v *Value, what string) []Expr {
	if v.Kind != KindList {
		hint := ""
		if v.Kind == KindString {
			hint = fmt.Sprintf(`; write skipIf: [%q]`, v.Str)
		}
		d.probs.Add(v.Pos, "type", "skipIf of %s must be a list of CEL conditions, not %s%s", what, v.Kind, hint)
		return nil
	}
	var out []Expr
	for _, item := range v.Items {
		switch {
		case item.Kind != KindString:
			d.probs.Add(item.Pos, "type", "a skipIf condition must be a string holding a CEL expression, not %s; quote it", item.Kind)
		case strings.TrimSpace(item.Str) == "":
			d.probs.Add(item.Pos, "minLength", "empty skipIf condition: write a CEL expression such as \"!parents.validate.isValid\", or remove the entry")
		default:
			out = append(out, Expr{Source: strings.TrimRight(item.Str, "\n"), Pos: item.Pos, style: item.Style})
		}
	}
	return out
}

func (d *decoder) onFailure(v *Value) *OnFailure {
	if !d.isMap(v, "onFailure", "a mapping such as {name: notify-admin}") {
		return nil
	}
	d.keys(v, "onFailure", "name", "retry", "timeout")
	h := &OnFailure{Pos: v.Pos}
	if f := d.required(v, "name", "onFailure has no name: add name: <handler-name>"); f != nil {
		h.Name, h.Pos = d.name(f.Value, "onFailure name"), f.Value.Pos
	}
	if f := v.Get("retry"); f != nil {
		h.retry = d.retry(f.Value, "onFailure.retry", "")
	}
	h.Retry = h.retry.over(d.defaults).apply(spec.DefaultRetryPolicy())
	h.Timeout = d.timeout
	if f := v.Get("timeout"); f != nil {
		h.Timeout = d.duration(f.Value, "onFailure.timeout")
	}
	return h
}

// isMap reports whether v is a mapping, and reports a problem if not.
func (d *decoder) isMap(v *Value, what, example string) bool {
	if v.Kind == KindMap {
		return true
	}
	d.probs.Add(v.Pos, "type", "%s must be %s, not %s", what, example, v.Kind)
	return false
}

// keys reports every key of m not in allowed (listed in the order
// messages show them).
func (d *decoder) keys(m *Value, what string, allowed ...string) {
	for _, f := range m.Fields {
		if contains(allowed, f.Key) {
			continue
		}
		if guess := closest(f.Key, allowed); guess != "" {
			d.probs.Add(f.KeyPos, "additionalProperties", "unknown key %q in %s; did you mean %q?", f.Key, what, guess)
			continue
		}
		d.probs.Add(f.KeyPos, "additionalProperties", "unknown key %q in %s (allowed: %s)", f.Key, what, strings.Join(allowed, ", "))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// required returns m's entry for key, reporting msg at m when it is absent.
func (d *decoder) required(m *Value, key, msg string) *Field {
	f := m.Get(key)
	if f == nil {
		d.probs.Add(m.Pos, "required", "%s", msg)
	}
	return f
}

func (d *decoder) str(v *Value, what string) string {
	if v.Kind != KindString {
		d.probs.Add(v.Pos, "type", "%s must be a string, not %s", what, v.Kind)
		return ""
	}
	return v.Str
}

// name checks a workflow, step or handler name and returns it, or "" when
// it is invalid.
func (d *decoder) name(v *Value, what string) string {
	if v.Kind != KindString {
		d.probs.Add(v.Pos, "type", "%s must be a string such as order-processing, not %s", what, v.Kind)
		return ""
	}
	if !validName(v.Str) {
		msg := fmt.Sprintf("%s %q is invalid: use lowercase letters, digits and '-', starting with a letter and not ending with '-'", what, v.Str)
		if s := suggestName(v.Str); s != "" {
			msg += fmt.Sprintf(" (such as %q)", s)
		}
		d.probs.Add(v.Pos, "pattern", "%s", msg)
		return ""
	}
	return v.Str
}

// duration parses a positive Go duration, or reports why it cannot and
// returns 0.
func (d *decoder) duration(v *Value, what string) time.Duration {
	const how = "write a number and a unit such as 1500ms, 30s, 5m or 24h"
	if v.Kind != KindString {
		if v.Kind == KindNumber {
			d.probs.Add(v.Pos, "type", "%s must be a Go duration with a unit, such as 30s or 5m, not a bare number", what)
		} else {
			d.probs.Add(v.Pos, "type", "%s must be a Go duration (%s), not %s", what, how, v.Kind)
		}
		return 0
	}
	dur, err := time.ParseDuration(v.Str)
	switch {
	case err != nil && strings.HasSuffix(v.Str, "d"):
		d.probs.Add(v.Pos, "pattern", "%s: %q is not a Go duration; Go durations have no days, write hours such as 24h", what, v.Str)
	case err != nil:
		d.probs.Add(v.Pos, "pattern", "%s: %q is not a Go duration; %s", what, v.Str, how)
	case dur <= 0:
		d.probs.Add(v.Pos, "pattern", "%s: %q is not positive; %s", what, v.Str, how)
	default:
		return dur
	}
	return 0
}
