package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/effectivelabs/trellis/internal/suggest"
	"github.com/effectivelabs/trellis/schema/condition"
)

// Resolver finds the workflows that child workflow steps start, so that
// a step's input can be checked against its child's input schema and its
// output typed by the child's steps.
type Resolver interface {
	// Resolve returns the workflow named name that a step of the workflow
	// file from starts: the one in file (a path relative to from's
	// directory) when file is not empty, else the one of that name among
	// the workflow files of from's directory. Its error says, for people,
	// why there is none, or that the child has problems of its own.
	Resolve(from, name, file string) (*Workflow, error)
}

// resolveChildren finds the child workflow of every child workflow step
// and gives the step its output schema: the child's outputs by step.
func resolveChildren(w *Workflow, r Resolver, probs *Problems) {
	for _, s := range w.Steps {
		c := s.Child
		if c == nil {
			continue
		}
		pos := c.NamePos
		if c.File != "" {
			pos = c.FilePos
		}
		if r == nil {
			probs.Add(pos, "", "%s: cannot look up workflow %s: no workflow files to look in", s.label, c.Name)
			continue
		}
		child, err := r.Resolve(w.File, c.Name, c.File)
		if err != nil {
			probs.Add(pos, "", "%s: %v", s.label, err)
			continue
		}
		c.Workflow = child
		out, err := childOutputSchema(child, c.Pos)
		if err != nil {
			probs.Add(pos, "", "%s: cannot describe the outputs of workflow %s: %v", s.label, c.Name, err)
			continue
		}
		s.Output = out
	}
}

// childOutputSchema is the JSON Schema of what a child workflow step
// completes with: an object with an optional property per step of the
// child that has an output (a list of outputs for a map step), holding
// that output. The steps' $defs are gathered at the root, each renamed
// <step>-<name> (so OrdersShipLabelAddress in Go, for $defs/Address of
// step label of the child of step ship). Positions are pos, the step's
// workflow mapping, where problems with the type are reported.
func childOutputSchema(child *Workflow, pos Pos) (*Schema, error) {
	var text bytes.Buffer // properties in the child's step order, for the Go fields
	text.WriteString(`{"type":"object","description":`)
	desc, _ := json.Marshal(fmt.Sprintf("The outputs of a run of workflow %s, by step: a step that did not complete, or has no output, is absent.", child.Name))
	text.Write(desc)
	text.WriteString(`,"properties":{`)
	defs := map[string]any{}
	n := 0
	for _, s := range child.Steps {
		if s.Output == nil || !s.Output.OK || s.Name == "" {
			continue
		}
		var node map[string]any
		if err := json.Unmarshal([]byte(s.Output.JSON), &node); err != nil {
			return nil, fmt.Errorf("step %s: %w", s.Name, err)
		}
		if d, ok := node["$defs"].(map[string]any); ok {
			for name, def := range d {
				defs[s.Name+"-"+name] = renameRefs(def, s.Name)
			}
			delete(node, "$defs")
		}
		prop := renameRefs(node, s.Name)
		if s.IsMap() {
			prop = map[string]any{"type": "array", "items": prop}
		}
		raw, err := json.Marshal(prop)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			text.WriteByte(',')
		}
		key, _ := json.Marshal(s.Name)
		text.Write(key)
		text.WriteByte(':')
		text.Write(raw)
		n++
	}
	text.WriteByte('}')
	if len(defs) > 0 {
		raw, err := json.Marshal(defs)
		if err != nil {
			return nil, err
		}
		text.WriteString(`,"$defs":`)
		text.Write(raw)
	}
	text.WriteByte('}')
	probs := NewProblems("")
	root := load(text.Bytes(), probs)
	if root == nil || probs.Len() > 0 {
		return nil, fmt.Errorf("%v", probs.List())
	}
	relocate(root, pos)
	canonical, err := root.CanonicalJSON()
	if err != nil {
		return nil, err
	}
	return &Schema{Value: root, JSON: canonical, OK: true}, nil
}

// renameRefs returns v with every local $ref "#/$defs/X" renamed to
// "#/$defs/<step>-X".
func renameRefs(v any, step string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if s, ok := val.(string); ok && k == "$ref" {
				if name, ok := strings.CutPrefix(s, "#/$defs/"); ok {
					out[k] = "#/$defs/" + step + "-" + name
					continue
				}
			}
			out[k] = renameRefs(val, step)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = renameRefs(val, step)
		}
		return out
	}
	return v
}

// checkChildInput type-checks the input expressions of child workflow
// step s against its child's input schema: every field the child
// declares, fitting its type, and every field it requires.
func checkChildInput(s *Step, env *condition.Env, lines [][]byte, probs *Problems) {
	c := s.Child
	if c == nil || c.Input == nil {
		return
	}
	var fields map[string]json.RawMessage
	var required []string
	if c.Workflow != nil && c.Workflow.Input != nil && c.Workflow.Input.OK {
		var err error
		if fields, required, err = properties(c.Workflow.Input.JSON); err != nil {
			probs.Add(c.Pos, "", "%s: cannot read the input schema of workflow %s: %v", s.label, c.Name, err)
			return
		}
	}
	given := map[string]bool{}
	for _, f := range c.Input {
		given[f.Name] = true
		x, issues := env.CompileValue(f.Expr.Source)
		for _, iss := range issues {
			probs.Add(exprPos(lines, f.Expr, iss.Line, iss.Column), "", "invalid input field %s of workflow %s: %s%s", f.Name, c.Name, iss.Message, dashHint(iss.Message, s))
		}
		if fields == nil {
			continue // the child is unknown or broken: reported already
		}
		target, ok := fields[f.Name]
		if !ok {
			names := make([]string, 0, len(fields))
			for name := range fields {
				names = append(names, name)
			}
			hint := ""
			if guess := suggest.Closest(f.Name, names); guess != "" {
				hint = fmt.Sprintf("; did you mean %q?", guess)
			}
			probs.Add(f.NamePos, "", "workflow %s has no input field %q%s", c.Name, f.Name, hint)
			continue
		}
		if x == nil {
			continue
		}
		if err := x.Assignable(target); err != nil {
			probs.Add(f.Expr.Pos, "", "input field %s of workflow %s: %q does not fit: %v", f.Name, c.Name, f.Expr.Source, err)
		}
	}
	var missing []string
	for _, r := range required {
		if !given[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		probs.Add(c.Pos, "", "%s: the input of workflow %s requires %s; give %s under input", s.label, c.Name,
			strings.Join(missing, ", "), map[bool]string{true: "it", false: "them"}[len(missing) == 1])
	}
}

// properties returns the property schemas of an object schema (each with
// the root's $defs, so that its references resolve) and its required
// properties.
func properties(schema string) (map[string]json.RawMessage, []string, error) {
	var root struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
		Defs       map[string]any            `json:"$defs"`
	}
	if err := json.Unmarshal([]byte(schema), &root); err != nil {
		return nil, nil, err
	}
	out := make(map[string]json.RawMessage, len(root.Properties))
	for name, prop := range root.Properties {
		if len(root.Defs) > 0 {
			prop["$defs"] = root.Defs
		}
		raw, err := json.Marshal(prop)
		if err != nil {
			return nil, nil, err
		}
		out[name] = raw
	}
	sort.Strings(root.Required)
	return out, root.Required, nil
}

// InputSchema is the input schema of the resolved child workflow, with
// every position moved to the step's workflow mapping, where problems
// with its Go type are reported in this file; nil when the child is not
// resolved.
func (c *Child) InputSchema() *Schema {
	if c.Workflow == nil || c.Workflow.Input == nil || !c.Workflow.Input.OK {
		return nil
	}
	probs := NewProblems("")
	root := load([]byte(c.Workflow.Input.JSON), probs)
	if root == nil || probs.Len() > 0 {
		return nil
	}
	relocate(root, c.Pos)
	return &Schema{Value: root, JSON: c.Workflow.Input.JSON, OK: true}
}
