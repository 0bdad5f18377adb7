package condition

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// ValueExpr is a compiled, type-checked expression over input and parents
// whose value becomes JSON: one field of a child workflow's input.
type ValueExpr struct {
	source string
	prg    cel.Program
	typ    *types.Type
	env    *Env
}

// Source is the expression text the expression was compiled from.
func (x *ValueExpr) Source() string { return x.source }

// CompileValue parses and type-checks an expression whose value is
// passed on as JSON, such as input.address or
// parents.charge.map(c, c.chargeId). It returns every problem found; an
// expression is returned only when there are none. Whether the value
// fits where it goes is Assignable's to say.
func (e *Env) CompileValue(expr string) (*ValueExpr, []Issue) {
	return compile(e, expr, func(*types.Type) string { return "" }, func(prg cel.Program, out *types.Type) *ValueExpr {
		return &ValueExpr{source: expr, prg: prg, typ: out, env: e}
	})
}

// Eval evaluates the expression and returns its value as JSON.
func (x *ValueExpr) Eval(ctx context.Context, vars *Vars) (json.RawMessage, error) {
	out, _, err := x.prg.ContextEval(ctx, vars.activation())
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", x.source, err)
	}
	v, err := jsonValue(out)
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", x.source, err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", x.source, err)
	}
	return raw, nil
}

// Assignable reports why the expression's values may not fit the JSON
// Schema target (raw JSON), or nil when they do as far as types tell:
// scalars of the same kind (an int where a number goes, too), lists and
// maps of fitting values, and objects whose fields the target declares,
// each fitting, with the target's required fields among them; a map
// where an object goes fits when its values fit every field (a map
// literal of mixed values always does: which keys it has is for the
// target's schema to check). A schema
// or a type that says nothing (dyn) fits anything; what types cannot
// tell (bounds, formats, whether an optional field is there) is for the
// target's schema to check when the value is used.
func (x *ValueExpr) Assignable(target json.RawMessage) error {
	s, err := newBuilder().document("trellis.target", target)
	if err != nil {
		return err
	}
	return x.env.fits(x.typ, s, map[string]bool{})
}

// fits reports why values of CEL type t do not fit shape s. seen holds
// the object types already being compared, so that recursive types end.
func (e *Env) fits(t *types.Type, s *shape, seen map[string]bool) error {
	if s.kind == kindDyn || t.Kind() == types.DynKind || t.Kind() == types.AnyKind {
		return nil
	}
	want := func(what string) error { return fmt.Errorf("it has type %s where %s goes", typeName(t), what) }
	switch s.kind {
	case kindBool:
		if t.Kind() != types.BoolKind {
			return want("a bool")
		}
	case kindInt:
		if t.Kind() != types.IntKind && t.Kind() != types.UintKind {
			return want("an int")
		}
	case kindDouble:
		if t.Kind() != types.DoubleKind && t.Kind() != types.IntKind && t.Kind() != types.UintKind {
			return want("a number")
		}
	case kindString:
		if t.Kind() != types.StringKind {
			return want("a string")
		}
	case kindTimestamp:
		if t.Kind() != types.TimestampKind {
			return want("a timestamp")
		}
	case kindList:
		if t.Kind() != types.ListKind {
			return want("a list")
		}
		if err := e.fits(t.Parameters()[0], s.elem, seen); err != nil {
			return fmt.Errorf("an item: %w", err)
		}
	case kindMap:
		if t.Kind() != types.MapKind {
			return want("a map")
		}
		if err := e.fits(t.Parameters()[1], s.elem, seen); err != nil {
			return fmt.Errorf("a value: %w", err)
		}
	case kindObject:
		return e.fitsObject(t, s.object, seen)
	}
	return nil
}

func (e *Env) fitsObject(t *types.Type, target *objectType, seen map[string]bool) error {
	if t.Kind() == types.MapKind && t.Parameters()[0].Kind() != types.IntKind {
		// A map, such as the literal {'orderId': payload.id}: its keys
		// are not types, so only its values can be compared, with every
		// field it may hold; values of mixed types (dyn) say nothing.
		for _, f := range target.order {
			if err := e.fits(t.Parameters()[1], target.fields[f], seen); err != nil {
				return fmt.Errorf("it is a map whose values may be field %s, and %w", f, err)
			}
		}
		return nil
	}
	if t.Kind() != types.StructKind {
		return fmt.Errorf("it has type %s where an object goes", typeName(t))
	}
	src, ok := e.objects[t.TypeName()]
	if !ok {
		return nil // not an object the schemas describe: nothing to compare
	}
	pair := t.TypeName() + "\x00" + target.name
	if seen[pair] {
		return nil
	}
	seen[pair] = true
	for _, f := range src.order {
		dst, ok := target.fields[f]
		if !ok {
			if open, isBool := target.schema["additionalProperties"].(bool); isBool && !open {
				return fmt.Errorf("field %s is not in the target, which allows no other fields", f)
			}
			continue
		}
		if err := e.fits(src.fields[f].cel, dst, seen); err != nil {
			return fmt.Errorf("field %s: %w", f, err)
		}
	}
	required, _ := target.schema["required"].([]any)
	for _, r := range required {
		name, _ := r.(string)
		if _, ok := src.fields[name]; !ok && name != "" {
			return fmt.Errorf("it has no field %s, which the target requires", name)
		}
	}
	return nil
}

// typeName names a CEL type for people: objects from the schemas by the
// path they were built from.
func typeName(t *types.Type) string {
	switch t.Kind() {
	case types.ListKind:
		return "list(" + typeName(t.Parameters()[0]) + ")"
	case types.MapKind:
		return "map(" + typeName(t.Parameters()[0]) + ", " + typeName(t.Parameters()[1]) + ")"
	case types.StructKind:
		return "object " + t.TypeName()
	}
	return t.String()
}
