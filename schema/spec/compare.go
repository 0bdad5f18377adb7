package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// ChangeKind names what changed between two versions of a workflow
// (Compare). Its values are stable: they are printed, written in JSON
// and named in the lists of changes a deploy check accepts.
type ChangeKind string

// The kinds of change Compare reports.
const (
	// ChangeStepRemoved: a step of the old version is not in the new one.
	ChangeStepRemoved ChangeKind = "step-removed"
	// ChangeStepRenamed: a step of the old version is not in the new one,
	// and a step the old version did not have has its kind, parents and
	// schemas: the same step under a new name.
	ChangeStepRenamed ChangeKind = "step-renamed"
	// ChangeStepKind: a step is of another kind (code, sleep, map, child
	// workflow, wait).
	ChangeStepKind ChangeKind = "step-kind"
	// ChangeOutput: a step's output schema changed in a way its readers
	// notice (see Compare for the rule).
	ChangeOutput ChangeKind = "output"
	// ChangeParents: a step's parents changed.
	ChangeParents ChangeKind = "parents"
	// ChangeInput: the workflow's input schema refuses inputs the old one
	// accepted (a new required property, a type narrowed ...).
	ChangeInput ChangeKind = "input"
	// ChangeEvent: an event's payload schema changed, or an event was
	// removed.
	ChangeEvent ChangeKind = "event"
	// ChangeChild: a child workflow step starts another workflow, builds
	// its input otherwise, or reads other outputs of it (its output
	// schema, the child's outputs by step, changed); or, from
	// ChildContract, a child workflow's input needs what a step that
	// starts it does not supply.
	ChangeChild ChangeKind = "child-workflow"
)

// ChangeKinds returns every kind of change, in the order docs list them.
func ChangeKinds() []ChangeKind {
	return []ChangeKind{ChangeStepRemoved, ChangeStepRenamed, ChangeStepKind, ChangeOutput,
		ChangeParents, ChangeInput, ChangeEvent, ChangeChild}
}

// Valid reports whether k is one of ChangeKinds.
func (k ChangeKind) Valid() bool { return slices.Contains(ChangeKinds(), k) }

// Change is one difference between an old and a new version of a
// workflow that runs of the old version may notice.
type Change struct {
	Kind ChangeKind `json:"kind"`
	// Step is the step of the old version the change concerns (for
	// ChangeStepRenamed, its old name); empty for a change of the
	// workflow's input or of an event.
	Step string `json:"step,omitempty"`
	// NewStep is the step's name in the new version: Step, or its new
	// name for ChangeStepRenamed; empty when the step was removed or the
	// change concerns no step.
	NewStep string `json:"newStep,omitempty"`
	// Event is the event a ChangeEvent concerns.
	Event string `json:"event,omitempty"`
	// Message says what changed, for people.
	Message string `json:"message"`
	// Breaking is true when the change can break the code or the data
	// of runs of the old version that the new version's code or engines
	// go on with; false for a change noted for information (a parent
	// removed, a property that became optional in an input ...).
	Breaking bool `json:"breaking"`
}

// Compare returns the differences between two versions of one workflow
// that matter to runs of old carried on by the code and engines of new,
// in the order of old's steps (then new's), then its input and events.
// Runs keep their version's spec, but a worker runs a step's code as
// registered now, and a step's output, stored by one version's code, is
// read by the other's: Compare reports what such a mix may break.
//
// Steps are matched by name. A step of old missing from new is
// ChangeStepRenamed when exactly one step new added (and no other
// missing step) has its kind, parents and output schema, and
// ChangeStepRemoved otherwise. For a step in both it reports a change of
// kind, of parents (a parent added to a step that runs code is
// breaking: the new code reads an output old runs may not have; one
// removed is not), of output schema
// (by the schema rule below) and, for a child workflow step, of the
// workflow it starts or how its input is built.
//
// The workflow's input schema is compared in one direction: inputs
// stored by runs and schedules of old are read by new code, so a change
// is breaking when a document valid under old may be invalid under new.
// Outputs and event payloads are read on both sides (old code and
// conditions read what new code stores, and the other way round), so any
// change the rule finds is breaking, except a property added as
// optional.
//
// The schema rule compares two JSON Schemas keyword by keyword, at every
// depth: type (integer counts as a kind of number), properties (a
// property removed; one added and required), required (a property that
// became required, or optional), items, additionalProperties and
// prefixItems (compared as schemas), enum and const (values added or
// removed). Annotations (title, description, examples, default,
// $comment, deprecated, readOnly, writeOnly, x-*) are ignored. Any other
// keyword ($ref, $defs, anyOf, oneOf, allOf, not, pattern, format,
// bounds ...) and a schema that is not a JSON object is compared as
// written: when it differs, the rule cannot decide and treats it as a
// change in both directions, and says so.
func Compare(old, new *Workflow) []Change {
	var out []Change
	newSteps := map[string]*Step{}
	for i := range new.Steps {
		newSteps[new.Steps[i].Name] = &new.Steps[i]
	}
	oldSteps := map[string]*Step{}
	for i := range old.Steps {
		oldSteps[old.Steps[i].Name] = &old.Steps[i]
	}
	renamed := renames(old, new, oldSteps, newSteps)
	// newName maps a step of old to its name in new.
	newName := func(name string) string {
		if n, ok := renamed[name]; ok {
			return n
		}
		return name
	}
	for i := range old.Steps {
		o := &old.Steps[i]
		if to, ok := renamed[o.Name]; ok {
			out = append(out, Change{Kind: ChangeStepRenamed, Step: o.Name, NewStep: to, Breaking: true,
				Message: fmt.Sprintf("step %s was renamed %s: the new code has none for %s, so runs of the old version wait for a worker that serves their version", o.Name, to, o.Name)})
			out = append(out, compareStep(o, newSteps[to], newName)...)
			continue
		}
		n, ok := newSteps[o.Name]
		if !ok {
			out = append(out, Change{Kind: ChangeStepRemoved, Step: o.Name, Breaking: true,
				Message: fmt.Sprintf("step %s was removed: the new code has none for it, so runs of the old version that have not finished it wait for a worker that serves their version", o.Name)})
			continue
		}
		out = append(out, compareStep(o, n, newName)...)
	}
	for _, d := range compareSchemas(old.InputSchema, new.InputSchema, "input") {
		if !d.narrows {
			continue
		}
		out = append(out, Change{Kind: ChangeInput, Breaking: true,
			Message: "input schema: " + d.msg + ": the input of runs and schedules of the old version may not be valid under the new one"})
	}
	for _, e := range old.Events {
		n, ok := new.Event(e.Name)
		if !ok {
			out = append(out, Change{Kind: ChangeEvent, Event: e.Name, Breaking: true,
				Message: fmt.Sprintf("event %s was removed", e.Name)})
			continue
		}
		for _, d := range compareSchemas(e.Schema, n.Schema, "payload") {
			out = append(out, Change{Kind: ChangeEvent, Event: e.Name, Breaking: true,
				Message: fmt.Sprintf("event %s payload schema: %s", e.Name, d.msg)})
		}
	}
	return out
}

// renames pairs each step of old missing from new with the one step new
// added that has its kind, parents (by their new names) and output
// schema, when the pairing is one to one.
func renames(old, new *Workflow, oldSteps, newSteps map[string]*Step) map[string]string {
	var gone, added []*Step
	for i := range old.Steps {
		if _, ok := newSteps[old.Steps[i].Name]; !ok {
			gone = append(gone, &old.Steps[i])
		}
	}
	for i := range new.Steps {
		if _, ok := oldSteps[new.Steps[i].Name]; !ok {
			added = append(added, &new.Steps[i])
		}
	}
	same := func(o, n *Step) bool {
		return stepKind(o) == stepKind(n) && sameSchema(o.OutputSchema, n.OutputSchema) &&
			slices.Equal(sorted(o.Parents), sorted(n.Parents))
	}
	out := map[string]string{}
	for _, o := range gone {
		var match []*Step
		for _, n := range added {
			if same(o, n) {
				match = append(match, n)
			}
		}
		if len(match) != 1 {
			continue
		}
		rivals := 0
		for _, g := range gone {
			if same(g, match[0]) {
				rivals++
			}
		}
		if rivals == 1 {
			out[o.Name] = match[0].Name
		}
	}
	return out
}

// ChildContract checks a child workflow step of one workflow (as stored
// with a version in progress, say) against a version of the workflow it
// starts: every property the child's input schema requires must be one
// the step's input fields build. A step whose code builds the input
// (no input fields) is not checked: its code is compiled against the
// child it registers. It returns ChangeChild changes, breaking, with
// Step the step's name.
func ChildContract(step *Step, child *Workflow) []Change {
	if !step.IsChild() || len(step.Workflow.Input) == 0 {
		return nil
	}
	var schema map[string]any
	if json.Unmarshal([]byte(child.InputSchema), &schema) != nil {
		return []Change{{Kind: ChangeChild, Step: step.Name, NewStep: step.Name, Breaking: true,
			Message: fmt.Sprintf("the input schema of workflow %s is not valid JSON, so whether step %s supplies it cannot be decided; treated as changed", child.Name, step.Name)}}
	}
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(stringSet(schema["required"]))) {
		if _, ok := step.Workflow.Input[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return []Change{{Kind: ChangeChild, Step: step.Name, NewStep: step.Name, Breaking: true,
		Message: fmt.Sprintf("workflow %s requires input %s, which step %s does not build", child.Name, strings.Join(missing, ", "), step.Name)}}
}

// compareStep compares one step in its two versions.
func compareStep(o, n *Step, newName func(string) string) []Change {
	var out []Change
	change := func(kind ChangeKind, breaking bool, format string, args ...any) {
		out = append(out, Change{Kind: kind, Step: o.Name, NewStep: n.Name, Breaking: breaking,
			Message: fmt.Sprintf(format, args...)})
	}
	if ko, kn := stepKind(o), stepKind(n); ko != kn {
		change(ChangeStepKind, true, "step %s was a %s step and is a %s step", n.Name, ko, kn)
		return out
	}
	oldParents := map[string]bool{}
	for _, p := range o.Parents {
		oldParents[newName(p)] = true
	}
	var added, removed []string
	for _, p := range n.Parents {
		if !oldParents[p] {
			added = append(added, p)
		}
		delete(oldParents, p)
	}
	for _, p := range o.Parents {
		if oldParents[newName(p)] {
			removed = append(removed, newName(p))
		}
	}
	switch {
	case len(added) > 0 && n.RunsCode():
		change(ChangeParents, true, "step %s has new parents %s: its code reads their outputs, which runs of the old version may not have", n.Name, strings.Join(added, ", "))
	case len(added) > 0:
		change(ChangeParents, false, "step %s has new parents %s", n.Name, strings.Join(added, ", "))
	}
	if len(removed) > 0 {
		change(ChangeParents, false, "step %s no longer has parents %s", n.Name, strings.Join(removed, ", "))
	}
	if o.IsWait() {
		// Its output is its event's payload: a change of it is the
		// event's.
		if o.WaitFor.Event != n.WaitFor.Event {
			change(ChangeEvent, true, "step %s waits for event %s instead of %s", n.Name, n.WaitFor.Event, o.WaitFor.Event)
		}
		return out
	}
	for _, d := range compareSchemas(o.ResultSchema(), n.ResultSchema(), "output") {
		if o.IsChild() {
			change(ChangeChild, d.narrows || d.widens, "step %s: the outputs of workflow %s changed: %s", n.Name, n.Workflow.Name, d.msg)
			continue
		}
		change(ChangeOutput, d.narrows || d.widens, "step %s output schema: %s", n.Name, d.msg)
	}
	if o.IsChild() {
		switch {
		case o.Workflow.Name != n.Workflow.Name:
			change(ChangeChild, true, "step %s starts workflow %s instead of %s", n.Name, n.Workflow.Name, o.Workflow.Name)
		case !maps.Equal(o.Workflow.Input, n.Workflow.Input):
			change(ChangeChild, true, "step %s builds the input of workflow %s otherwise", n.Name, n.Workflow.Name)
		}
	}
	return out
}

// stepKind names the kind of a step.
func stepKind(s *Step) string {
	switch {
	case s.IsSleep():
		return "sleep"
	case s.IsMap():
		return "map"
	case s.IsChild():
		return "child workflow"
	case s.IsWait():
		return "wait"
	}
	return "code"
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// schemaDiff is one difference the schema rule finds.
type schemaDiff struct {
	msg string
	// narrows: a document valid under the old schema may be invalid
	// under the new one. widens: a document valid under the new schema
	// may lack what a reader of the old one relies on.
	narrows, widens bool
}

// maxSchemaDepth bounds how deep the rule walks; deeper schemas are
// compared as written.
const maxSchemaDepth = 32

// maxSchemaDiffs bounds the differences reported for one schema.
const maxSchemaDiffs = 20

// sameSchema reports whether two schemas are equal as JSON values.
func sameSchema(a, b string) bool {
	return len(compareSchemas(a, b, "")) == 0
}

// compareSchemas applies the schema rule (see Compare) to two schemas
// given as JSON text; an empty text is no schema.
func compareSchemas(old, new, what string) []schemaDiff {
	if old == new {
		return nil
	}
	var diffs []schemaDiff
	switch {
	case old == "" && new == "":
		return nil
	case old == "":
		return []schemaDiff{{msg: "a schema was added where there was none", widens: true}}
	case new == "":
		return []schemaDiff{{msg: "the schema was removed: readers of the old version read what it described", widens: true}}
	}
	var o, n any
	if json.Unmarshal([]byte(old), &o) != nil || json.Unmarshal([]byte(new), &n) != nil {
		return []schemaDiff{{msg: "is not valid JSON on one side, so whether it changed cannot be decided; treated as changed", narrows: true, widens: true}}
	}
	walkSchemas(o, n, what, 0, &diffs)
	if len(diffs) > maxSchemaDiffs {
		more := len(diffs) - maxSchemaDiffs
		diffs = append(diffs[:maxSchemaDiffs], schemaDiff{msg: fmt.Sprintf("and %d more differences", more), narrows: true, widens: true})
	}
	return diffs
}

// ignoredKeywords are annotations: they change no document's validity.
var ignoredKeywords = map[string]bool{
	"title": true, "description": true, "examples": true, "default": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// walkSchemas compares the schemas o and n found at path.
func walkSchemas(o, n any, path string, depth int, diffs *[]schemaDiff) {
	add := func(narrows, widens bool, format string, args ...any) {
		*diffs = append(*diffs, schemaDiff{msg: fmt.Sprintf(format, args...), narrows: narrows, widens: widens})
	}
	undecided := func(what string) {
		add(true, true, "%s changed, which the check cannot decide is compatible; treated as changed", what)
	}
	om, ok1 := o.(map[string]any)
	nm, ok2 := n.(map[string]any)
	if !ok1 || !ok2 || depth > maxSchemaDepth {
		if !equalJSON(o, n) {
			undecided(at(path))
		}
		return
	}
	// type
	ot, nt := types(om["type"]), types(nm["type"])
	switch {
	case ot == nil && nt != nil:
		add(true, false, "%s: type is now %s (was any type)", at(path), typeList(nt))
	case ot != nil && nt == nil:
		add(false, true, "%s: type is now any type (was %s), which readers of the old version do not expect", at(path), typeList(ot))
	}
	var gone, come []string
	for _, t := range ot {
		if !hasType(nt, t) {
			gone = append(gone, t)
		}
	}
	for _, t := range nt {
		if !hasType(ot, t) {
			come = append(come, t)
		}
	}
	switch {
	case len(gone) > 0 && len(come) > 0:
		add(true, true, "%s: type changed from %s to %s", at(path), typeList(ot), typeList(nt))
	case len(gone) > 0:
		add(true, false, "%s: type %s is no longer allowed (now %s)", at(path), strings.Join(gone, " or "), typeList(nt))
	case len(come) > 0:
		add(false, true, "%s: type %s is now allowed (was %s), which readers of the old version do not expect", at(path), strings.Join(come, " or "), typeList(ot))
	}
	// properties and required
	op, _ := om["properties"].(map[string]any)
	np, _ := nm["properties"].(map[string]any)
	oreq, nreq := stringSet(om["required"]), stringSet(nm["required"])
	for _, name := range slices.Sorted(maps.Keys(op)) {
		sub := path + "." + name
		nsub, ok := np[name]
		if !ok {
			add(false, true, "%s was removed: readers of the old version read it", at(sub))
			continue
		}
		walkSchemas(op[name], nsub, sub, depth+1, diffs)
		switch {
		case nreq[name] && !oreq[name]:
			add(true, false, "%s is now required: documents of the old version may lack it", at(sub))
		case oreq[name] && !nreq[name]:
			add(false, true, "%s is no longer required: readers of the old version rely on it", at(sub))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(np)) {
		if _, ok := op[name]; !ok && nreq[name] {
			add(true, false, "%s was added as required: documents of the old version lack it", at(path+"."+name))
		}
	}
	// Required properties that neither lists under properties.
	for _, name := range slices.Sorted(maps.Keys(nreq)) {
		if _, ok := np[name]; !ok && !oreq[name] {
			add(true, false, "%s is now required: documents of the old version may lack it", at(path+"."+name))
		}
	}
	// subschemas
	for _, kw := range []string{"items", "additionalProperties"} {
		ov, oin := om[kw]
		nv, nin := nm[kw]
		switch {
		case !oin && !nin:
		case oin && nin:
			walkSchemas(ov, nv, path+suffix(kw), depth+1, diffs)
		default:
			undecided(fmt.Sprintf("%s of %s", kw, at(path)))
		}
	}
	// enum and const
	if oe, ne := om["enum"], nm["enum"]; oe != nil || ne != nil {
		ov, nv := jsonSet(oe), jsonSet(ne)
		switch {
		case oe == nil || ne == nil:
			undecided("enum of " + at(path))
		default:
			for _, v := range slices.Sorted(maps.Keys(ov)) {
				if !nv[v] {
					add(true, true, "%s: value %s is no longer allowed", at(path), short(v))
				}
			}
			for _, v := range slices.Sorted(maps.Keys(nv)) {
				if !ov[v] {
					add(false, true, "%s: value %s is now allowed, which readers of the old version do not expect", at(path), short(v))
				}
			}
		}
	}
	// every other keyword, as written
	handled := map[string]bool{"type": true, "properties": true, "required": true, "items": true, "additionalProperties": true, "enum": true}
	keys := map[string]bool{}
	for k := range om {
		keys[k] = true
	}
	for k := range nm {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if handled[k] || ignoredKeywords[k] || strings.HasPrefix(k, "x-") {
			continue
		}
		if !equalJSON(om[k], nm[k]) {
			undecided(fmt.Sprintf("keyword %s of %s", k, at(path)))
		}
	}
}

// short cuts a value quoted in a message to a readable length.
func short(v string) string {
	if r := []rune(v); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return v
}

func suffix(kw string) string {
	if kw == "items" {
		return "[]"
	}
	return "{}"
}

// at names a place in a schema for messages.
func at(path string) string {
	if path == "" {
		return "the schema"
	}
	return path
}

// types returns the types a type keyword allows, nil for any.
func types(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// hasType reports whether the types ts (nil for any) allow t.
func hasType(ts []string, t string) bool {
	if ts == nil {
		return true
	}
	for _, x := range ts {
		if x == t || (x == "number" && t == "integer") {
			return true
		}
	}
	return false
}

func typeList(ts []string) string {
	if ts == nil {
		return "any type"
	}
	return strings.Join(ts, " or ")
}

func stringSet(v any) map[string]bool {
	out := map[string]bool{}
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				out[s] = true
			}
		}
	}
	return out
}

func jsonSet(v any) map[string]bool {
	out := map[string]bool{}
	if l, ok := v.([]any); ok {
		for _, e := range l {
			b, _ := json.Marshal(e)
			out[string(b)] = true
		}
	}
	return out
}

// equalJSON reports whether two decoded JSON values are equal; encoding
// sorts object keys, so equal values encode alike.
func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
