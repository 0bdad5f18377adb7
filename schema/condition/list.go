package condition

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// ListExpr is a compiled, type-checked expression over input and parents
// whose value is a list: the items of a map step.
type ListExpr struct {
	source string
	prg    cel.Program
	// ItemSchema is the JSON Schema (as JSON text) of one item, derived
	// from the expression's type.
	ItemSchema string
}

// Source is the expression text the expression was compiled from.
func (x *ListExpr) Source() string { return x.source }

// CompileList parses and type-checks an expression whose value is a list
// of items of a known type, such as input.lineItems or
// parents.load.rows.filter(r, r.amount > 0). It returns every problem
// found; an expression is returned only when there are none.
func (e *Env) CompileList(expr string) (*ListExpr, []Issue) {
	var itemSchema string
	return compile(e, expr, func(out *types.Type) string {
		if out.Kind() != types.ListKind {
			return fmt.Sprintf("forEach must be a list, but %q has type %s", expr, out)
		}
		item, err := e.schemaOf(out.Parameters()[0])
		if err != nil {
			return fmt.Sprintf("the items of %q: %v", expr, err)
		}
		raw, err := json.Marshal(item)
		if err != nil {
			return err.Error()
		}
		itemSchema = string(raw)
		return ""
	}, func(prg cel.Program, _ *types.Type) *ListExpr {
		return &ListExpr{source: expr, prg: prg, ItemSchema: itemSchema}
	})
}

// schemaOf describes values of a CEL type as a JSON Schema: the schema an
// object type was built from, or the schema of a scalar, list or map.
func (e *Env) schemaOf(t *types.Type) (map[string]any, error) {
	switch t.Kind() {
	case types.BoolKind:
		return map[string]any{"type": "boolean"}, nil
	case types.IntKind:
		return map[string]any{"type": "integer"}, nil
	case types.DoubleKind:
		return map[string]any{"type": "number"}, nil
	case types.StringKind:
		return map[string]any{"type": "string"}, nil
	case types.TimestampKind:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case types.ListKind:
		items, err := e.schemaOf(t.Parameters()[0])
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case types.MapKind:
		values, err := e.schemaOf(t.Parameters()[1])
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": values}, nil
	case types.StructKind:
		obj, ok := e.objects[t.TypeName()]
		if !ok || obj.schema == nil {
			break
		}
		out := make(map[string]any, len(obj.schema)+1)
		for k, v := range obj.schema {
			out[k] = v
		}
		if len(obj.defs) > 0 {
			out["$defs"] = obj.defs
		}
		return out, nil
	}
	return nil, fmt.Errorf("their type, %s, does not say what an item holds; select a list the schemas describe", t)
}

// Eval evaluates the expression and returns each item as JSON.
func (x *ListExpr) Eval(ctx context.Context, vars *Vars) ([]json.RawMessage, error) {
	out, _, err := x.prg.ContextEval(ctx, vars.activation())
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", x.source, err)
	}
	list, ok := out.(traits.Lister)
	if !ok {
		return nil, fmt.Errorf("evaluating %q: result is %v, not a list", x.source, out.Type())
	}
	var items []json.RawMessage
	for it := list.Iterator(); it.HasNext() == types.True; {
		v, err := jsonValue(it.Next())
		if err != nil {
			return nil, fmt.Errorf("evaluating %q: item %d: %w", x.source, len(items), err)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("evaluating %q: item %d: %w", x.source, len(items), err)
		}
		items = append(items, raw)
	}
	return items, nil
}

// jsonValue turns a CEL value back into the JSON value it stands for.
func jsonValue(v ref.Val) (any, error) {
	switch val := v.(type) {
	case types.Bool, types.Int, types.Double, types.String:
		return val.Value(), nil
	case types.Uint:
		return uint64(val), nil
	case types.Null:
		return nil, nil
	case types.Timestamp:
		return val.Time.UTC().Format(time.RFC3339Nano), nil
	case *objectVal:
		out := make(map[string]any, len(val.obj.fields))
		for name, field := range val.obj.fields {
			fv, err := jsonValue(val.adapter.NativeToValue(field))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = fv
		}
		return out, nil
	case traits.Lister:
		var out []any
		for it := val.Iterator(); it.HasNext() == types.True; {
			iv, err := jsonValue(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, iv)
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	case traits.Mapper:
		out := map[string]any{}
		for it := val.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key is %s, not a string", k.Type())
			}
			mv, err := jsonValue(val.Get(k))
			if err != nil {
				return nil, err
			}
			out[string(ks)] = mv
		}
		return out, nil
	}
	return nil, fmt.Errorf("a value of type %s has no JSON form", v.Type())
}
