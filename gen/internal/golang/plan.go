// Package golang generates the Go code of a workflow: the input and
// output types its JSON Schemas map to, the Steps interface users
// implement, typed parent access, the embedded runtime.WorkflowSpec,
// typed step references (runtime.StepRef), a typed result that holds
// every output, read through those references, and the typed client: the
// runtime's generic runtime.Client, named for the workflow, with a typed
// method per event. The behaviour lives in the runtime; the generated code
// is data and thin wrappers. Plan maps and names
// everything, reporting what cannot be mapped or would collide; Generate
// renders a plan with jennifer and returns gofmt'ed source.
package golang

import (
	"fmt"
	"github.com/dave/jennifer/jen"

	"github.com/effectivelabs/trellis/gen/internal/workflow"
)

// Plan is everything the generator decided about one workflow: the Go
// name of every type, step, field and constant.
type Plan struct {
	w *workflow.Workflow
	// goName prefixes every identifier (order-processing -> OrderProcessing).
	goName string
	input  *namedType
	types  []*namedType
	steps  []*stepPlan
	events []*eventPlan
	// onFailure is the Go name of the failure handler's method, if any.
	onFailure string
	idents    []Ident
	// badName is true when the workflow's name is invalid; goName is then
	// a stand-in, so that the rest can still be checked.
	badName bool
}

// Ident is a package-level identifier the generated file declares, with
// the place in the workflow file it comes from.
type Ident struct {
	Name string
	Pos  workflow.Pos
	// What says what the identifier is for, in messages.
	What string
}

type stepPlan struct {
	step   *workflow.Step
	goName string
	output *namedType // nil for steps without output
	item   *namedType // the item of a map step; nil for other steps
	// childInput is the input of the workflow a child workflow step
	// starts, which its code returns; nil for other steps.
	childInput *namedType
	parents    []parentPlan
}

// eventPlan is an event wait steps wait for, and its payload type.
type eventPlan struct {
	event   *workflow.Event
	goName  string
	payload *namedType
	// keyed is true when a wait for it has a key: the client sends it by
	// key too.
	keyed bool
	// starts is true when the workflow starts on it: the client
	// publishes it.
	starts bool
}

// result is the Go type of what a step's children and its run's result
// receive from it: its output, or the list of its items' outputs.
func (s *stepPlan) result() jen.Code { return resultOf(s.output, s.step.IsMap()) }

func resultOf(output *namedType, list bool) jen.Code {
	if list {
		return jen.Index().Id(output.name)
	}
	return jen.Id(output.name)
}

type parentPlan struct {
	name   string
	goName string
	// output is the parent's output type, nil when it has none.
	output *namedType
	// list is true when the parent is a map step: its children receive
	// the list of its items' outputs.
	list bool
	// maySkip is true when the parent may be skipped.
	maySkip bool
	// optional is true when the step may run without the parent: the
	// parent may be skipped and is not the step's only parent. (A step
	// whose parents are all skipped is skipped, so an only parent has
	// always completed when its child runs.)
	optional bool
}

// GoName is the workflow's name as a Go identifier, the prefix of every
// identifier the generated file declares; "" when the name is invalid.
func (p *Plan) GoName() string {
	if p.badName {
		return ""
	}
	return p.goName
}

// Identifiers returns the package-level identifiers the generated file
// declares, so that callers can check that workflows sharing a package do
// not collide.
func (p *Plan) Identifiers() []Ident { return p.idents }

// Check maps the workflow's schemas to Go types and names everything,
// reporting schemas that cannot be mapped and Go names that collide. It
// works on partial workflows too (Parse found problems), so that lint
// reports everything at once; the plan is only fit to generate from when
// neither Parse nor Check reported a problem.
func Check(w *workflow.Workflow) (*Plan, []workflow.Problem) {
	probs := workflow.NewProblems(w.File)
	p := &Plan{w: w, goName: goName(w.Name)}
	if p.goName == "" {
		p.goName, p.badName = "Workflow", true
	}
	ids := newIdents(probs)
	for _, suffix := range []string{"Steps", "Spec", "Refs", "Result", "StepStatuses", "Client"} {
		ids.claim(p.goName+suffix, w.NamePos, "the workflow")
	}
	ids.claim("New"+p.goName+"Client", w.NamePos, "the workflow")
	ids.claim("Register"+p.goName, w.NamePos, "the workflow")
	ids.claim("Register"+p.goName+"Former", w.NamePos, "the workflow")
	ids.claim(unexported(p.goName)+"Refs", w.NamePos, "the workflow")
	ids.claim(unexported(p.goName)+"Result", w.NamePos, "the workflow")

	m := &mapper{probs: probs}
	if w.Input != nil && w.Input.OK {
		doc := fmt.Sprintf("%sInput is the input of %s %s run.", p.goName, article(w.Name), w.Name)
		p.input = m.document(w.Input, p.goName+"Input", doc, "input", p.goName, "the input")
	}
	p.planEvents(m, ids)
	p.planSteps(m, ids)
	p.types = m.types
	for _, t := range m.types {
		ids.claim(t.name, t.pos, "a type")
		for _, v := range t.values {
			ids.claim(v.name, v.pos, fmt.Sprintf("enum value %q", v.value))
		}
	}
	checkRecursion(m.types, probs)
	p.idents = ids.list
	return p, probs.List()
}

// planEvents names each event's payload type and the client's methods
// that send it.
func (p *Plan) planEvents(m *mapper, ids *idents) {
	for _, ev := range p.w.Events {
		if ev.Name == "" || ev.Schema == nil || !ev.Schema.OK {
			continue
		}
		ep := &eventPlan{event: ev, goName: goName(ev.Name)}
		name := p.goName + ep.goName + "Event"
		doc := fmt.Sprintf("%s is the payload of event %s.", name, ev.Name)
		ep.payload = m.document(ev.Schema, name, doc, "events."+ev.Name, p.goName+ep.goName, "the payload of event "+ev.Name)
		for _, s := range p.w.Steps {
			if s.IsWait() && s.WaitFor.Event == ev.Name && s.WaitFor.Key != nil {
				ep.keyed = true
			}
		}
		for _, st := range p.w.StartOn {
			if st.Event == ev.Name {
				ep.starts = true
			}
		}
		p.events = append(p.events, ep)
	}
}

// event returns the plan of the named event, or nil.
func (p *Plan) event(name string) *eventPlan {
	for _, ep := range p.events {
		if ep.event.Name == name {
			return ep
		}
	}
	return nil
}

func (p *Plan) planSteps(m *mapper, ids *idents) {
	methods := map[string]string{} // Go method name -> step name
	byName := map[string]*stepPlan{}
	for _, s := range p.w.Steps {
		if s.Name == "" {
			continue
		}
		sp := &stepPlan{step: s, goName: goName(s.Name)}
		if other, dup := methods[sp.goName]; dup {
			if other != s.Name {
				m.probs.Add(s.Pos, "", "steps %q and %q both become Go name %s; rename one of them", other, s.Name, sp.goName)
			}
			continue
		}
		methods[sp.goName] = s.Name
		byName[s.Name] = sp
		p.steps = append(p.steps, sp)
		if s.IsWait() {
			if ep := p.event(s.WaitFor.Event); ep != nil {
				sp.output = ep.payload // a wait step completes with its event's payload
			}
		} else if s.Output != nil && s.Output.OK && !s.IsSleep() {
			name := p.goName + sp.goName + "Output"
			doc := fmt.Sprintf("%s is the output of step %s.", name, s.Name)
			sp.output = m.document(s.Output, name, doc, s.Name+".output", p.goName+sp.goName, "the output of step "+s.Name)
			if s.IsMap() {
				sp.output.doc = fmt.Sprintf("%s is the output of step %s for one item; its children receive the list of them, in item order.", name, s.Name)
			}
		}
		if s.IsChild() && s.Child.Input == nil && s.Child.Workflow != nil && s.Child.Workflow.Input != nil && s.Child.Workflow.Input.OK {
			name := p.goName + sp.goName + "Input"
			doc := fmt.Sprintf("%s is the input of the %s run that step %s starts, which its code returns.", name, s.Child.Name, s.Name)
			if in := s.Child.InputSchema(); in != nil {
				sp.childInput = m.document(in, name, doc, s.Name+".workflow.input", p.goName+sp.goName+"Input", "the input of workflow "+s.Child.Name)
			}
		}
		if s.IsMap() && s.ForEach.Item != nil {
			name := p.goName + sp.goName + "Item"
			doc := fmt.Sprintf("%s is one item of step %s (forEach: %s).", name, s.Name, s.ForEach.Items.Source)
			sp.item = m.document(s.ForEach.Item, name, doc, s.Name+".item", p.goName+sp.goName+"Item", "the items of step "+s.Name)
		}
		if len(s.Parents) > 0 && s.RunsCode() {
			ids.claim(p.goName+sp.goName+"Parents", s.Pos, fmt.Sprintf("the parents of step %s", s.Name))
		}
		if sp.output != nil {
			switch sp.goName {
			case "ID", "Status", "Steps", "Failure":
				m.probs.Add(s.Pos, "", "step %q has an output, which %sResult would hold in field %s, but that field holds the run's %s; rename the step", s.Name, p.goName, sp.goName, sp.goName)
			}
		}
	}
	if h := p.w.OnFailure; h != nil && h.Name != "" {
		p.onFailure = goName(h.Name)
		if other, dup := methods[p.onFailure]; dup && other != h.Name {
			m.probs.Add(h.Pos, "", "onFailure %q and step %q both become Go method %s of %sSteps; rename one of them", h.Name, other, p.onFailure, p.goName)
		}
	}
	for _, sp := range p.steps {
		for _, ref := range sp.step.Parents {
			parent := byName[ref.Name]
			if parent == nil {
				continue
			}
			sp.parents = append(sp.parents, parentPlan{
				name: ref.Name, goName: parent.goName, output: parent.output, list: parent.step.IsMap(),
				maySkip: parent.step.MaySkip, optional: parent.step.MaySkip && len(sp.step.Parents) > 1,
			})
		}
	}
}

// idents tracks the package-level names a file declares.
type idents struct {
	probs *workflow.Problems
	seen  map[string]Ident
	list  []Ident
}

func newIdents(probs *workflow.Problems) *idents {
	return &idents{probs: probs, seen: map[string]Ident{}}
}

func (ids *idents) claim(name string, pos workflow.Pos, what string) {
	if first, dup := ids.seen[name]; dup {
		ids.probs.Add(pos, "", "the Go name %s for %s is already used for %s (line %d); rename one of them", name, what, first.What, first.Pos.Line)
		return
	}
	id := Ident{Name: name, Pos: pos, What: what}
	ids.seen[name] = id
	ids.list = append(ids.list, id)
}

// checkRecursion reports schemas no finite value satisfies and Go cannot
// declare: a struct that requires (and so holds by value) itself. ($defs
// that only refer to each other never get here: package workflow rejects
// them.)
func checkRecursion(types []*namedType, probs *workflow.Problems) {
	for _, t := range types {
		if t.kind != namedStruct {
			continue
		}
		for _, f := range t.fields {
			if !f.required {
				continue
			}
			if target := structOf(f.typ); target != nil && holds(target, t, map[*namedType]bool{}) {
				probs.Add(f.pos, "", "property %q is required and holds %s again, so no finite value satisfies the schema (and Go cannot declare the type); make it optional or put it in a list", f.json, t.name)
			}
		}
	}
}

// structOf returns the struct a type holds by value, if any.
func structOf(t *goType) *namedType {
	seen := map[*namedType]bool{}
	for t != nil && t.kind == kindNamed && !seen[t.named] {
		n := t.named
		seen[n] = true
		if n.kind == namedStruct {
			return n
		}
		if n.kind != namedOther {
			return nil
		}
		t = n.under
	}
	return nil
}

// holds reports whether struct s holds target by value, directly or
// through required fields.
func holds(s, target *namedType, seen map[*namedType]bool) bool {
	if s == target {
		return true
	}
	if seen[s] {
		return false
	}
	seen[s] = true
	for _, f := range s.fields {
		if !f.required {
			continue
		}
		if inner := structOf(f.typ); inner != nil && holds(inner, target, seen) {
			return true
		}
	}
	return false
}
