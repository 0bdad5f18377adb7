package workflow

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/effectivelabs/trellis/internal/suggest"
	"github.com/effectivelabs/trellis/schema/condition"
)

// StartOn is an event that starts runs of the workflow: startOn's
// entries.
type StartOn struct {
	// Pos is where the entry is written.
	Pos Pos
	// Event names one of the workflow's events, written at EventPos.
	Event    string
	EventPos Pos
	// If is the filter over payload, or nil.
	If *Expr
	// Fields build the input field by field, in file order; Whole builds
	// it with one expression. At most one is set; neither means the
	// payload is the input.
	Fields []*ChildField
	Whole  *Expr
}

// startOn reads the events that start the workflow: a list of {event,
// if, input}. checkStartOn type-checks the expressions.
func (d *decoder) startOn(v *Value) []*StartOn {
	if v.Kind != KindList {
		d.probs.Add(v.Pos, "type", "startOn must be a list of events that start the workflow (each item starting with '- event: ...'), not %s", v.Kind)
		return nil
	}
	var out []*StartOn
	for i, item := range v.Items {
		what := fmt.Sprintf("startOn[%d]", i)
		if !d.isMap(item, what, `a mapping such as {event: order-placed, if: "payload.total > 100", input: {orderId: payload.id}}`) {
			continue
		}
		d.keys(item, what, "event", "if", "input")
		st := &StartOn{Pos: item.Pos}
		f := d.required(item, "event", what+" has no event: add event: <one of the workflow's events>")
		if f == nil {
			continue
		}
		if st.Event, st.EventPos = d.name(f.Value, "event name"), f.Value.Pos; st.Event == "" {
			continue
		}
		if f := item.Get("if"); f != nil {
			if x, ok := d.celString(f.Value, "if of "+what, "a CEL condition over payload, such as \"payload.total > 100\""); ok {
				st.If = &x
			}
		}
		if f := item.Get("input"); f != nil {
			switch f.Value.Kind {
			case KindString:
				if x, ok := d.celString(f.Value, "input of "+what, "a CEL expression over payload whose value is the input"); ok {
					st.Whole = &x
				}
			case KindMap:
				st.Fields = d.startFields(f.Value, what)
			default:
				d.probs.Add(f.Value.Pos, "type", "input of %s must be a mapping from each input field to a CEL expression over payload, such as {orderId: payload.id}, or one CEL expression, not %s", what, f.Value.Kind)
			}
		}
		out = append(out, st)
	}
	return out
}

// startFields reads the input of a startOn entry written field by field.
func (d *decoder) startFields(v *Value, what string) []*ChildField {
	if len(v.Fields) == 0 {
		d.probs.Add(v.Pos, "minProperties", "input of %s is empty: give the input's fields, or leave input out for the payload to be the input", what)
		return nil
	}
	out := []*ChildField{}
	for _, field := range v.Fields {
		if x, ok := d.celString(field.Value, fmt.Sprintf("input field %s of %s", field.Key, what), "a CEL expression over payload, such as \"payload.id\""); ok {
			out = append(out, &ChildField{Name: field.Key, NamePos: field.KeyPos, Expr: x})
		}
	}
	return out
}

// celString reads a string holding a CEL expression; example says what
// one looks like.
func (d *decoder) celString(v *Value, what, example string) (Expr, bool) {
	switch {
	case v.Kind != KindString:
		d.probs.Add(v.Pos, "type", "%s must be a string holding %s, not %s", what, example, v.Kind)
	case strings.TrimSpace(v.Str) == "":
		d.probs.Add(v.Pos, "minLength", "empty %s: write %s", what, example)
	default:
		return Expr{Source: strings.TrimRight(v.Str, "\n"), Pos: v.Pos, style: v.Style}, true
	}
	return Expr{}, false
}

// checkStartOn type-checks each startOn entry against its event's
// payload schema and the input schema: the filter is a bool, and the
// input it builds fits the input schema (every field it gives declared
// and fitting, every required field given). The event is checked by
// check (spec.RuleStartOn).
func checkStartOn(w *Workflow, lines [][]byte, probs *Problems) {
	for _, st := range w.StartOn {
		ev, ok := w.Event(st.Event)
		if !ok || ev.Schema == nil || !ev.Schema.OK {
			for _, x := range st.exprs() {
				for _, iss := range condition.Parse(x.Source) {
					probs.Add(exprPos(lines, *x, iss.Line, iss.Column), "", "invalid startOn expression: %s", iss.Message)
				}
			}
			continue
		}
		env, err := condition.NewPayloadEnv(json.RawMessage(ev.Schema.JSON))
		if err != nil {
			probs.Add(st.EventPos, "", "cannot type-check startOn of event %s: %v", st.Event, err)
			continue
		}
		if st.If != nil {
			_, issues := env.Compile(st.If.Source)
			for _, iss := range issues {
				probs.Add(exprPos(lines, *st.If, iss.Line, iss.Column), "", "invalid startOn filter of event %s: %s", st.Event, iss.Message)
			}
		}
		if w.Input == nil || !w.Input.OK {
			continue // reported already
		}
		switch {
		case st.Fields != nil:
			checkStartFields(st, env, w.Input.JSON, lines, probs)
		default:
			whole := st.Whole
			if whole == nil {
				whole = &Expr{Source: "payload", Pos: st.EventPos}
			}
			x, issues := env.CompileValue(whole.Source)
			for _, iss := range issues {
				probs.Add(exprPos(lines, *whole, iss.Line, iss.Column), "", "invalid startOn input of event %s: %s", st.Event, iss.Message)
			}
			if x == nil {
				continue
			}
			if err := x.Assignable(json.RawMessage(w.Input.JSON)); err != nil {
				if st.Whole == nil {
					probs.Add(st.EventPos, "", "the payload of event %s is not an input of workflow %s: %v; build the input with startOn's input, such as input: {orderId: payload.id}", st.Event, w.Name, err)
				} else {
					probs.Add(whole.Pos, "", "startOn input of event %s: %q does not fit the input schema: %v", st.Event, whole.Source, err)
				}
			}
		}
	}
}

// exprs are the entry's expressions.
func (st *StartOn) exprs() []*Expr {
	var out []*Expr
	if st.If != nil {
		out = append(out, st.If)
	}
	if st.Whole != nil {
		out = append(out, st.Whole)
	}
	for _, f := range st.Fields {
		out = append(out, &f.Expr)
	}
	return out
}

// checkStartFields type-checks the input fields of a startOn entry
// against the input schema.
func checkStartFields(st *StartOn, env *condition.Env, inputSchema string, lines [][]byte, probs *Problems) {
	fields, required, err := properties(inputSchema)
	if err != nil {
		probs.Add(st.Pos, "", "cannot read the input schema: %v", err)
		return
	}
	given := map[string]bool{}
	for _, f := range st.Fields {
		given[f.Name] = true
		x, issues := env.CompileValue(f.Expr.Source)
		for _, iss := range issues {
			probs.Add(exprPos(lines, f.Expr, iss.Line, iss.Column), "", "invalid startOn input field %s: %s", f.Name, iss.Message)
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
			probs.Add(f.NamePos, "", "the input has no field %q%s", f.Name, hint)
			continue
		}
		if x == nil {
			continue
		}
		if err := x.Assignable(target); err != nil {
			probs.Add(f.Expr.Pos, "", "startOn input field %s: %q does not fit: %v", f.Name, f.Expr.Source, err)
		}
	}
	var missing []string
	for _, r := range required {
		if !given[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		probs.Add(st.Pos, "", "startOn of event %s: the input requires %s; give %s under input", st.Event,
			strings.Join(missing, ", "), map[bool]string{true: "it", false: "them"}[len(missing) == 1])
	}
}

// startOnHint guesses the event a startOn entry meant.
func startOnHint(st *StartOn, w *Workflow) string {
	var names []string
	for _, ev := range w.Events {
		names = append(names, ev.Name)
	}
	if guess := suggest.Closest(st.Event, names); guess != "" {
		return fmt.Sprintf("; did you mean %q?", guess)
	}
	return ""
}
