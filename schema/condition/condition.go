// Package condition compiles and evaluates skipIf expressions.
//
// A condition is a CEL expression over two variables: input, the run input,
// and parents, which has one field per declared parent of the step holding
// that parent's output. Both are typed from the workflow's JSON Schemas, so
// a misspelt field, a reference to a step that is not a parent, or an
// expression that is not boolean is found when the workflow is linted, not
// when it runs.
//
// JSON maps to CEL as follows: objects with properties are struct types
// (absent optional fields read as their zero value; has() tests presence),
// objects with only additionalProperties are maps, arrays are lists,
// integers are int, numbers are double, strings with format date-time are
// timestamps. A skipped parent reads as an empty object: has(parents.x) is
// false when x was skipped. A parent whose name holds '-' is written with
// backticks: parents.`fraud-window`.
//
// The same package is used by the generator (to type-check) and by the
// runtime (to evaluate), so both agree on what a condition means.
package condition

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// costLimit bounds the work a single condition may do when evaluated, so
// that a pathological comprehension cannot stall a worker.
const costLimit = 1_000_000

// Env is the typing environment for the conditions of one step.
type Env struct {
	cel *cel.Env
	// root is the variable input is the type of: input, or payload in a
	// payload environment (NewPayloadEnv).
	root    string
	input   *shape
	parents map[string]*shape
	names   []string // parent names, sorted
	pobj    *objectType
	objects map[string]*objectType // every object type, by CEL name
}

// Issue is one problem found in a condition, located within the expression
// text: Line is 1-based, Column is 1-based and counts runes.
type Issue struct {
	Line    int
	Column  int
	Message string
}

func (i Issue) String() string { return fmt.Sprintf("%d:%d: %s", i.Line, i.Column, i.Message) }

// NewEnv builds the environment for a step whose run input is described by
// the JSON Schema inputSchema, and whose declared parents have the given
// output schemas (an empty schema for a parent without output).
func NewEnv(inputSchema json.RawMessage, parentSchemas map[string]json.RawMessage) (*Env, error) {
	b := newBuilder()
	in, err := b.document("trellis.input", inputSchema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	e := &Env{root: "input", input: in, parents: map[string]*shape{}}
	e.pobj = &objectType{name: "trellis.parents", fields: map[string]*shape{}}
	for name := range parentSchemas {
		e.names = append(e.names, name)
	}
	sort.Strings(e.names)
	for _, name := range e.names {
		s, err := b.document("trellis.parents."+typeSafe(name), parentSchemas[name])
		if err != nil {
			return nil, fmt.Errorf("output schema of %s: %w", name, err)
		}
		e.parents[name] = s
		e.pobj.fields[name] = s
		e.pobj.order = append(e.pobj.order, name)
	}
	b.objects[e.pobj.name] = e.pobj
	e.objects = b.objects
	prov, err := newProvider(b.objects)
	if err != nil {
		return nil, err
	}
	e.cel, err = cel.NewEnv(
		// Step names may hold '-': parents.`fraud-window` names one.
		cel.EnableIdentifierEscapeSyntax(),
		cel.CustomTypeProvider(prov),
		cel.CustomTypeAdapter(prov),
		cel.Variable("input", in.cel),
		cel.Variable("parents", types.NewObjectType(e.pobj.name)),
	)
	if err != nil {
		return nil, fmt.Errorf("building condition environment: %w", err)
	}
	return e, nil
}

// typeSafe keeps step names (which may hold '-') readable inside CEL type
// names.
func typeSafe(name string) string { return strings.ReplaceAll(name, "-", "_") }

// Program is a compiled, type-checked condition.
type Program struct {
	source string
	prg    cel.Program
}

// Source is the expression text the program was compiled from.
func (p *Program) Source() string { return p.source }

// Compile parses and type-checks expr. It returns every problem found;
// a program is returned only when there are none.
func (e *Env) Compile(expr string) (*Program, []Issue) {
	return compile(e, expr, func(out *types.Type) string {
		if !out.IsExactType(types.BoolType) {
			return fmt.Sprintf("condition must be a boolean expression, but %q has type %s", expr, out)
		}
		return ""
	}, func(prg cel.Program, _ *types.Type) *Program { return &Program{source: expr, prg: prg} })
}

// compile parses and type-checks expr over input and parents, refusing
// a selection of a step that is not a parent and a type that want does
// not accept (it says why, or returns ""), and returns what build makes
// of the program and its type. It returns every problem found.
func compile[T any](e *Env, expr string, want func(*types.Type) string, build func(cel.Program, *types.Type) T) (T, []Issue) {
	var zero T
	parsed, iss := e.cel.Parse(expr)
	if iss.Err() != nil {
		return zero, issues(iss)
	}
	if bad := e.nonParents(parsed); len(bad) > 0 {
		return zero, bad
	}
	checked, iss := e.cel.Check(parsed)
	if iss.Err() != nil {
		if e.root == "payload" { // startOn's expressions say what was meant
			return zero, hinted(e.cel, e.input, []string{e.root}, expr, issues(iss))
		}
		return zero, issues(iss)
	}
	out := checked.OutputType()
	if msg := want(out); msg != "" {
		return zero, []Issue{{Line: 1, Column: 1, Message: msg}}
	}
	prg, err := e.cel.Program(checked, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return zero, []Issue{{Line: 1, Column: 1, Message: err.Error()}}
	}
	return build(prg, out), nil
}

// Parse checks only the syntax of a condition, for when the schemas it
// would be type-checked against are themselves broken.
func Parse(expr string) []Issue {
	env, err := cel.NewEnv(cel.EnableIdentifierEscapeSyntax())
	if err != nil {
		return []Issue{{Line: 1, Column: 1, Message: err.Error()}}
	}
	if _, iss := env.Parse(expr); iss.Err() != nil {
		return issues(iss)
	}
	return nil
}

// nonParents reports selections parents.x where x is not a declared parent,
// with a clearer message than the type checker's "undefined field".
func (e *Env) nonParents(parsed *cel.Ast) []Issue {
	if e.root != "input" {
		return nil // a payload environment has no parents
	}
	native := parsed.NativeRep()
	var out []Issue
	for _, sel := range ast.MatchDescendants(ast.NavigateAST(native), ast.KindMatcher(ast.SelectKind)) {
		s := sel.AsSelect()
		op := s.Operand()
		if op.Kind() != ast.IdentKind || op.AsIdent() != "parents" {
			continue
		}
		if _, ok := e.pobj.fields[s.FieldName()]; ok {
			continue
		}
		loc := native.SourceInfo().GetStartLocation(sel.ID())
		msg := fmt.Sprintf("%q is not a parent of this step", s.FieldName())
		if len(e.names) == 0 {
			msg += " (it has no parents)"
		} else {
			msg += fmt.Sprintf(" (parents: %s)", strings.Join(e.names, ", "))
		}
		out = append(out, Issue{Line: loc.Line(), Column: loc.Column() + 1, Message: msg})
	}
	return out
}

func issues(iss *cel.Issues) []Issue {
	var out []Issue
	for _, err := range iss.Errors() {
		line, col := err.Location.Line(), err.Location.Column()+1
		if line < 1 {
			line, col = 1, 1
		}
		out = append(out, Issue{Line: line, Column: col, Message: err.Message})
	}
	return out
}

// Vars holds the values conditions are evaluated against: the run input and
// the outputs of the step's parents.
type Vars struct {
	root    string
	input   any
	parents *object
}

// activation is what a program of the environment reads.
func (v *Vars) activation() map[string]any {
	return map[string]any{v.root: v.input, "parents": v.parents}
}

// Bind converts the run input and the outputs of the completed parents into
// condition values. A parent missing from outputs was skipped; a completed
// parent without output maps to nil.
func (e *Env) Bind(input json.RawMessage, outputs map[string]json.RawMessage) (*Vars, error) {
	in, err := decodeAndConvert(e.input, input, "input")
	if err != nil {
		return nil, err
	}
	p := &object{typ: e.pobj, fields: make(map[string]any, len(outputs))}
	for name, raw := range outputs {
		s, ok := e.parents[name]
		if !ok {
			continue
		}
		v, err := decodeAndConvert(s, raw, "parents."+name)
		if err != nil {
			return nil, err
		}
		p.fields[name] = v
	}
	return &Vars{root: e.root, input: in, parents: p}, nil
}

func decodeAndConvert(s *shape, raw json.RawMessage, path string) (any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return zero(s), nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	return convert(s, v, path)
}

// Eval evaluates the condition. An evaluation error (for example a division
// by zero or an out-of-range index) is returned as an error, never as false.
func (p *Program) Eval(ctx context.Context, vars *Vars) (bool, error) {
	out, _, err := p.prg.ContextEval(ctx, vars.activation())
	if err != nil {
		return false, fmt.Errorf("evaluating %q: %w", p.source, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("evaluating %q: result is %v, not a boolean", p.source, out)
	}
	return b, nil
}
