package condition

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// FilterEnv is the typing environment of run filters: CEL expressions
// that select runs of one workflow (trellis runs list -where). A filter
// reads five variables:
//
//	input    the run input, typed by the workflow's input schema
//	status   the run's status: "RUNNING", "COMPLETED", "FAILED" or "CANCELLED"
//	tenant   the run's tenant
//	created  when the run was created (a timestamp)
//	tags     the run's tags, a map of strings to strings
//
// Input fields read as they do in conditions: an absent optional field
// reads as its zero value. Tags read the same way: tags.customer (or
// tags["customer"]) is "" for a run without that tag, and `"customer" in
// tags` tells whether it has it.
type FilterEnv struct {
	cel   *cel.Env
	input *shape
	// vars are the names of the variables, for "did you mean".
	vars []string
}

// NewFilterEnv builds the environment of filters over runs whose input the
// JSON Schema inputSchema describes.
func NewFilterEnv(inputSchema json.RawMessage) (*FilterEnv, error) {
	vars := []struct {
		name string
		typ  *types.Type
	}{{"status", types.StringType}, {"tenant", types.StringType}, {"created", types.TimestampType},
		{"tags", types.NewMapType(types.StringType, types.StringType)}}
	names := []string{"input"}
	var opts []cel.EnvOption
	for _, v := range vars {
		names = append(names, v.name)
		opts = append(opts, cel.Variable(v.name, v.typ))
	}
	env, in, err := inputCEL(inputSchema, opts...)
	if err != nil {
		return nil, fmt.Errorf("building filter environment: %w", err)
	}
	return &FilterEnv{cel: env, input: in, vars: names}, nil
}

// Filter is a compiled, type-checked run filter.
type Filter struct {
	source string
	prg    cel.Program
	input  *shape
	push   Pushdown
}

// Source is the expression text the filter was compiled from.
func (f *Filter) Source() string { return f.source }

// Compile parses and type-checks a filter. It returns every problem
// found; a filter is returned only when there are none.
func (e *FilterEnv) Compile(expr string) (*Filter, []Issue) {
	checked, iss := e.cel.Compile(expr)
	if iss.Err() != nil {
		return nil, hinted(e.cel, e.input, e.vars, expr, issues(iss))
	}
	if !checked.OutputType().IsExactType(types.BoolType) {
		return nil, []Issue{{Line: 1, Column: 1, Message: fmt.Sprintf(
			"a filter must be a boolean expression, but %q has type %s", expr, checked.OutputType())}}
	}
	prg, err := e.cel.Program(checked, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, []Issue{{Line: 1, Column: 1, Message: err.Error()}}
	}
	f := &Filter{source: expr, prg: prg, input: e.input}
	f.push = pushdown(e.input, checked.NativeRep().Expr())
	return f, nil
}

// RunFacts are what a filter reads of a run.
type RunFacts struct {
	Input   json.RawMessage
	Status  string
	Tenant  string
	Created time.Time
	Tags    map[string]string
}

// Match evaluates the filter on a run, and returns the cost of the
// evaluation, in CEL's cost units (at most the per-evaluation limit of
// 1,000,000), so that a caller evaluating many runs can bound their total.
// An input that does not fit the schema the filter was compiled against,
// or an evaluation error (a division by zero, the cost limit), is an
// error, never a silent false.
func (f *Filter) Match(ctx context.Context, r RunFacts) (bool, uint64, error) {
	in, err := decodeAndConvert(f.input, r.Input, "input")
	if err != nil {
		return false, 0, err
	}
	out, det, err := f.prg.ContextEval(ctx, map[string]any{
		"input": in, "status": r.Status, "tenant": r.Tenant, "created": r.Created, "tags": newTagsValue(r.Tags),
	})
	var cost uint64
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	if err != nil {
		return false, max(cost, 1), fmt.Errorf("evaluating %q: %w", f.source, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, cost, fmt.Errorf("evaluating %q: result is %v, not a boolean", f.source, out)
	}
	return b, cost, nil
}

// Pushdown is what a store can check of a filter before the filter itself
// runs, so that it reads fewer runs: necessary conditions taken from the
// filter's top-level conjuncts. A run the filter matches always passes
// them; a run that passes them may still not match, so the filter is
// evaluated on every run a store returns.
type Pushdown struct {
	// Empty is true when no run can match (two conjuncts contradict).
	Empty bool
	// Statuses, when not nil, are the only statuses a matching run can
	// have.
	Statuses []string
	// Tenant, when not empty, is the only tenant a matching run can have.
	Tenant string
	// CreatedFrom and CreatedTo bound when a matching run was created: at
	// or after CreatedFrom, before CreatedTo (zero: unbounded).
	CreatedFrom, CreatedTo time.Time
	// InputContains, when not nil, are JSON documents one of which a
	// matching run's input contains, as Postgres's jsonb @> reads it:
	// every field of the document has the same value in the input.
	InputContains []json.RawMessage
	// Tags, when not nil, are tags a matching run carries, each with
	// this value (from conjuncts tags.k == "v"; never an empty value,
	// which a run without the tag reads as).
	Tags map[string]string
}

// Pushdown returns what a store can check before the filter runs.
func (f *Filter) Pushdown() Pushdown {
	p := f.push
	p.Statuses = slices.Clone(p.Statuses)
	p.InputContains = slices.Clone(p.InputContains)
	p.Tags = maps.Clone(p.Tags)
	return p
}

// pushdown collects the necessary conditions of the conjuncts of e.
func pushdown(input *shape, e ast.Expr) Pushdown {
	var p Pushdown
	var docs []map[string]any // alternatives, each a document the input contains
	inputIn := false          // an "in" over the input was used: one only, to keep docs few
	for _, c := range conjuncts(e) {
		if c.Kind() != ast.CallKind {
			continue
		}
		call := c.AsCall()
		if len(call.Args()) != 2 {
			continue
		}
		lhs, rhs := call.Args()[0], call.Args()[1]
		switch fn := call.FunctionName(); fn {
		case operators.Equals:
			if lhs.Kind() == ast.LiteralKind {
				lhs, rhs = rhs, lhs
			}
			if rhs.Kind() != ast.LiteralKind {
				continue
			}
			p.narrow(input, lhs, []ref.Val{rhs.AsLiteral()}, &docs, nil)
		case operators.In:
			if rhs.Kind() != ast.ListKind {
				continue
			}
			var vals []ref.Val
			for _, el := range rhs.AsList().Elements() {
				if el.Kind() != ast.LiteralKind {
					vals = nil
					break
				}
				vals = append(vals, el.AsLiteral())
			}
			if vals != nil {
				p.narrow(input, lhs, vals, &docs, &inputIn)
			}
		case operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
			p.bound(fn, lhs, rhs)
		}
	}
	for _, d := range docs {
		raw, err := json.Marshal(d)
		if err != nil { // cannot happen: the documents hold strings, numbers and booleans
			p.InputContains = nil
			break
		}
		p.InputContains = append(p.InputContains, raw)
	}
	if !p.CreatedFrom.IsZero() && !p.CreatedTo.IsZero() && !p.CreatedFrom.Before(p.CreatedTo) {
		p.Empty = true
	}
	return p
}

// conjuncts flattens the top-level && of e.
func conjuncts(e ast.Expr) []ast.Expr {
	if e.Kind() == ast.CallKind && e.AsCall().FunctionName() == operators.LogicalAnd {
		var out []ast.Expr
		for _, a := range e.AsCall().Args() {
			out = append(out, conjuncts(a)...)
		}
		return out
	}
	return []ast.Expr{e}
}

// narrow records that lhs equals one of vals: a status, a tenant, or an
// input field. inputIn is nil for ==, else whether an "in" over the input
// was recorded already.
func (p *Pushdown) narrow(input *shape, lhs ast.Expr, vals []ref.Val, docs *[]map[string]any, inputIn *bool) {
	if key, ok := tagKey(lhs); ok {
		if len(vals) != 1 {
			return
		}
		v, ok := vals[0].Value().(string)
		if !ok || v == "" {
			return
		}
		if old, ok := p.Tags[key]; ok && old != v {
			p.Empty = true
		}
		if p.Tags == nil {
			p.Tags = map[string]string{}
		}
		p.Tags[key] = v
		return
	}
	if lhs.Kind() == ast.IdentKind {
		var strs []string
		for _, v := range vals {
			s, ok := v.Value().(string)
			if !ok {
				return
			}
			strs = append(strs, s)
		}
		switch lhs.AsIdent() {
		case "status":
			if p.Statuses == nil {
				p.Statuses = strs
			} else {
				p.Statuses = slices.DeleteFunc(p.Statuses, func(s string) bool { return !slices.Contains(strs, s) })
			}
			p.Empty = p.Empty || len(p.Statuses) == 0
		case "tenant":
			if len(strs) != 1 {
				return
			}
			if p.Tenant != "" && p.Tenant != strs[0] {
				p.Empty = true
			}
			p.Tenant = strs[0]
		}
		return
	}
	path, leaf := inputPath(input, lhs)
	if path == nil || (inputIn != nil && *inputIn) {
		return
	}
	var leaves []any
	for _, v := range vals {
		j, ok := jsonLeaf(leaf, v)
		if !ok {
			return // the zero value: an absent field matches it, and containment would not
		}
		leaves = append(leaves, j)
	}
	if inputIn != nil {
		*inputIn = true
	}
	if *docs == nil {
		*docs = []map[string]any{{}}
	}
	var next []map[string]any
	for _, d := range *docs {
		for _, leaf := range leaves {
			c := cloneDoc(d)
			if !setPath(c, path, leaf) {
				continue // the document fixes this field to another value
			}
			next = append(next, c)
		}
	}
	if len(next) == 0 {
		p.Empty = true
	}
	*docs = next
}

// tagKey reads tags.k or tags["k"]: the key of a tag.
func tagKey(e ast.Expr) (string, bool) {
	switch e.Kind() {
	case ast.SelectKind:
		s := e.AsSelect()
		if !s.IsTestOnly() && s.Operand().Kind() == ast.IdentKind && s.Operand().AsIdent() == "tags" {
			return s.FieldName(), true
		}
	case ast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != operators.Index || len(c.Args()) != 2 {
			return "", false
		}
		m, k := c.Args()[0], c.Args()[1]
		if m.Kind() != ast.IdentKind || m.AsIdent() != "tags" || k.Kind() != ast.LiteralKind {
			return "", false
		}
		key, ok := k.AsLiteral().Value().(string)
		return key, ok
	}
	return "", false
}

// bound records a bound on created from created OP timestamp("...").
func (p *Pushdown) bound(fn string, lhs, rhs ast.Expr) {
	t, ok := timestampLiteral(rhs)
	if lhs.Kind() != ast.IdentKind || lhs.AsIdent() != "created" {
		t2, ok2 := timestampLiteral(lhs)
		if !ok2 || rhs.Kind() != ast.IdentKind || rhs.AsIdent() != "created" {
			return
		}
		t, ok = t2, true
		fn = map[string]string{
			operators.Less: operators.Greater, operators.LessEquals: operators.GreaterEquals,
			operators.Greater: operators.Less, operators.GreaterEquals: operators.LessEquals,
		}[fn]
	}
	if !ok {
		return
	}
	switch fn {
	case operators.Greater, operators.GreaterEquals: // inclusive either way: a superset
		if p.CreatedFrom.IsZero() || t.After(p.CreatedFrom) {
			p.CreatedFrom = t
		}
	case operators.Less, operators.LessEquals:
		if fn == operators.LessEquals {
			t = t.Add(time.Nanosecond)
		}
		if p.CreatedTo.IsZero() || t.Before(p.CreatedTo) {
			p.CreatedTo = t
		}
	}
}

// timestampLiteral reads timestamp("...") with a string literal.
func timestampLiteral(e ast.Expr) (time.Time, bool) {
	if e.Kind() != ast.CallKind {
		return time.Time{}, false
	}
	c := e.AsCall()
	if c.FunctionName() != "timestamp" || c.IsMemberFunction() || len(c.Args()) != 1 || c.Args()[0].Kind() != ast.LiteralKind {
		return time.Time{}, false
	}
	s, ok := c.Args()[0].AsLiteral().Value().(string)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// inputPath reads input.a.b...: the field names from the input down, and
// the shape of the last, when each step selects a declared field of an
// object and the last is a boolean, number or string.
func inputPath(input *shape, e ast.Expr) ([]string, *shape) {
	var rev []string
	for e.Kind() == ast.SelectKind {
		s := e.AsSelect()
		if s.IsTestOnly() {
			return nil, nil
		}
		rev = append(rev, s.FieldName())
		e = s.Operand()
	}
	if e.Kind() != ast.IdentKind || e.AsIdent() != "input" || len(rev) == 0 {
		return nil, nil
	}
	slices.Reverse(rev)
	s := input
	for _, name := range rev {
		if s.kind != kindObject {
			return nil, nil
		}
		if s = s.object.fields[name]; s == nil {
			return nil, nil
		}
	}
	switch s.kind {
	case kindBool, kindInt, kindDouble, kindString:
		return rev, s
	}
	return nil, nil
}

// jsonLeaf is the JSON value of literal v compared with a field of shape
// s, or false when v is that field's zero value or of another type.
func jsonLeaf(s *shape, v ref.Val) (any, bool) {
	switch x := v.Value().(type) {
	case bool:
		return x, s.kind == kindBool && x
	case string:
		return x, s.kind == kindString && x != ""
	case int64:
		return x, (s.kind == kindInt || s.kind == kindDouble) && x != 0
	case uint64:
		return x, (s.kind == kindInt || s.kind == kindDouble) && x != 0
	case float64:
		return x, (s.kind == kindInt || s.kind == kindDouble) && x != 0
	}
	return nil, false
}

// setPath sets path in doc to v, reporting false when doc already holds
// another value there.
func setPath(doc map[string]any, path []string, v any) bool {
	for _, name := range path[:len(path)-1] {
		next, ok := doc[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			doc[name] = next
		}
		doc = next
	}
	last := path[len(path)-1]
	if old, ok := doc[last]; ok {
		return sameLeaf(old, v)
	}
	doc[last] = v
	return true
}

// sameLeaf compares two JSON leaves, numbers by value.
func sameLeaf(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func cloneDoc(d map[string]any) map[string]any {
	c := make(map[string]any, len(d))
	for k, v := range d {
		if m, ok := v.(map[string]any); ok {
			v = cloneDoc(m)
		}
		c[k] = v
	}
	return c
}
