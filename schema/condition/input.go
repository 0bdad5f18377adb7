package condition

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// InputEnv is the typing environment of expressions over the run input
// alone, evaluated when a run is triggered: a workflow's priority, for
// one. An expression reads one variable, input, typed by the workflow's
// input schema as in conditions.
type InputEnv struct {
	cel   *cel.Env
	input *shape
}

// NewInputEnv builds the environment of expressions over run inputs that
// the JSON Schema inputSchema describes.
func NewInputEnv(inputSchema json.RawMessage) (*InputEnv, error) {
	env, in, err := inputCEL(inputSchema)
	if err != nil {
		return nil, fmt.Errorf("building input expression environment: %w", err)
	}
	return &InputEnv{cel: env, input: in}, nil
}

// inputCEL builds a CEL environment whose variable input is typed by the
// JSON Schema inputSchema, with the other variables vars declare.
func inputCEL(inputSchema json.RawMessage, vars ...cel.EnvOption) (*cel.Env, *shape, error) {
	b := newBuilder()
	in, err := b.document("trellis.input", inputSchema)
	if err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	prov, err := newProvider(b.objects)
	if err != nil {
		return nil, nil, err
	}
	opts := append([]cel.EnvOption{
		cel.EnableIdentifierEscapeSyntax(),
		cel.CustomTypeProvider(prov),
		cel.CustomTypeAdapter(prov),
		cel.Variable("input", in.cel),
	}, vars...)
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, nil, err
	}
	return env, in, nil
}

// IntExpr is a compiled, type-checked expression of type int over the
// run input.
type IntExpr struct {
	source   string
	prg      cel.Program
	input    *shape
	constant bool
}

// Source is the expression text the expression was compiled from.
func (x *IntExpr) Source() string { return x.source }

// CompileInt parses and type-checks an expression that must be an int,
// such as 3 or input.express ? 3 : 2. It returns every problem found; an
// expression is returned only when there are none.
func (e *InputEnv) CompileInt(expr string) (*IntExpr, []Issue) {
	checked, iss := e.cel.Compile(expr)
	if iss.Err() != nil {
		return nil, issues(iss)
	}
	if !checked.OutputType().IsExactType(types.IntType) {
		return nil, []Issue{{Line: 1, Column: 1, Message: fmt.Sprintf(
			"the expression must be of type int, but %q has type %s", expr, checked.OutputType())}}
	}
	prg, err := e.cel.Program(checked, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, []Issue{{Line: 1, Column: 1, Message: err.Error()}}
	}
	readsInput := len(ast.MatchDescendants(ast.NavigateAST(checked.NativeRep()), func(e ast.NavigableExpr) bool {
		return e.Kind() == ast.IdentKind && e.AsIdent() == "input"
	})) > 0
	return &IntExpr{source: expr, prg: prg, input: e.input, constant: !readsInput}, nil
}

// Constant returns the expression's value when it does not read the
// input, so that a checker can judge it before any run.
func (x *IntExpr) Constant(ctx context.Context) (int64, bool) {
	if !x.constant {
		return 0, false
	}
	v, err := x.Eval(ctx, nil)
	return v, err == nil
}

// Eval evaluates the expression on a run input. An input that does not
// fit the schema, or an evaluation error (a division by zero), is an
// error.
func (x *IntExpr) Eval(ctx context.Context, input json.RawMessage) (int64, error) {
	in, err := decodeAndConvert(x.input, input, "input")
	if err != nil {
		return 0, err
	}
	out, _, err := x.prg.ContextEval(ctx, map[string]any{"input": in})
	if err != nil {
		return 0, fmt.Errorf("evaluating %q: %w", x.source, err)
	}
	n, ok := out.Value().(int64)
	if !ok {
		return 0, fmt.Errorf("evaluating %q: result is %v, not an integer", x.source, out)
	}
	return n, nil
}

// KeyExpr is a compiled, type-checked expression over the run input whose
// value names a key: a string, an int or a bool.
type KeyExpr struct {
	source string
	prg    cel.Program
	input  *shape
}

// Source is the expression text the expression was compiled from.
func (x *KeyExpr) Source() string { return x.source }

// CompileKey parses and type-checks an expression whose value is a key,
// such as input.customerId. It returns every problem found; an expression
// is returned only when there are none.
func (e *InputEnv) CompileKey(expr string) (*KeyExpr, []Issue) {
	checked, iss := e.cel.Compile(expr)
	if iss.Err() != nil {
		return nil, issues(iss)
	}
	out := checked.OutputType()
	if !out.IsExactType(types.StringType) && !out.IsExactType(types.IntType) && !out.IsExactType(types.BoolType) {
		return nil, []Issue{{Line: 1, Column: 1, Message: fmt.Sprintf(
			"a key must be a string, an int or a bool, but %q has type %s", expr, out)}}
	}
	prg, err := e.cel.Program(checked, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, []Issue{{Line: 1, Column: 1, Message: err.Error()}}
	}
	return &KeyExpr{source: expr, prg: prg, input: e.input}, nil
}

// Eval evaluates the expression on a run input and returns the key as
// text: a string as it is, an int in decimal, a bool as true or false.
func (x *KeyExpr) Eval(ctx context.Context, input json.RawMessage) (string, error) {
	in, err := decodeAndConvert(x.input, input, "input")
	if err != nil {
		return "", err
	}
	out, _, err := x.prg.ContextEval(ctx, map[string]any{"input": in})
	if err != nil {
		return "", fmt.Errorf("evaluating %q: %w", x.source, err)
	}
	switch v := out.Value().(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	return "", fmt.Errorf("evaluating %q: result is %v, not a string, an int or a bool", x.source, out)
}
