package condition

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// object is the runtime value of a JSON object whose schema declares its
// properties. Fields holds converted values; an absent field reads as the
// zero value of its type, and has() tells whether it was present.
type object struct {
	typ    *objectType
	fields map[string]any
}

// provider resolves the object types built from JSON Schemas and delegates
// everything else to CEL's standard registry.
type provider struct {
	base    *types.Registry
	objects map[string]*objectType
}

var (
	_ types.Provider = (*provider)(nil)
	_ types.Adapter  = (*provider)(nil)
)

func newProvider(objects map[string]*objectType) (*provider, error) {
	base, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	return &provider{base: base, objects: objects}, nil
}

func (p *provider) EnumValue(name string) ref.Val { return p.base.EnumValue(name) }

func (p *provider) FindIdent(name string) (ref.Val, bool) { return p.base.FindIdent(name) }

func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := p.objects[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.base.FindStructType(name)
}

func (p *provider) FindStructFieldNames(name string) ([]string, bool) {
	if obj, ok := p.objects[name]; ok {
		return append([]string(nil), obj.order...), true
	}
	return p.base.FindStructFieldNames(name)
}

func (p *provider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	obj, ok := p.objects[name]
	if !ok {
		return p.base.FindStructFieldType(name, field)
	}
	s, ok := obj.fields[field]
	if !ok {
		return nil, false
	}
	return &types.FieldType{
		Type: s.cel,
		IsSet: func(target any) bool {
			o, ok := target.(*object)
			if !ok {
				return false
			}
			_, present := o.fields[field]
			return present
		},
		GetFrom: func(target any) (any, error) {
			o, ok := target.(*object)
			if !ok {
				return nil, fmt.Errorf("field %q selected on a %T", field, target)
			}
			if v, present := o.fields[field]; present {
				return v, nil
			}
			return zero(s), nil
		},
	}, true
}

// NewValue is called for object construction expressions such as
// `trellis.input{}`; conditions have no use for them.
func (p *provider) NewValue(name string, _ map[string]ref.Val) ref.Val {
	return types.NewErr("conditions cannot construct %s values", name)
}

// NativeToValue adapts the converted JSON values (see convert) to CEL values.
func (p *provider) NativeToValue(value any) ref.Val {
	switch v := value.(type) {
	case *object:
		return &objectVal{obj: v, adapter: p}
	case []any:
		return types.NewDynamicList(p, v)
	case map[string]any:
		return types.NewStringInterfaceMap(p, v)
	}
	return p.base.NativeToValue(value)
}

// zero is the value an absent field of shape s reads as.
func zero(s *shape) any {
	switch s.kind {
	case kindBool:
		return false
	case kindInt:
		return int64(0)
	case kindDouble:
		return float64(0)
	case kindString:
		return ""
	case kindTimestamp:
		return types.Timestamp{}
	case kindList:
		return []any{}
	case kindMap:
		return map[string]any{}
	case kindObject:
		return &object{typ: s.object, fields: map[string]any{}}
	}
	return types.NullValue
}

// objectVal is the CEL value of an object.
type objectVal struct {
	obj     *object
	adapter types.Adapter
}

func (o *objectVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(o.obj).AssignableTo(typeDesc) {
		return o.obj, nil
	}
	return nil, fmt.Errorf("cannot convert %s to %v", o.obj.typ.name, typeDesc)
}

func (o *objectVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.TypeType:
		return types.NewObjectType(o.obj.typ.name)
	}
	if t.TypeName() == o.obj.typ.name {
		return o
	}
	return types.NewErr("cannot convert %s to %s", o.obj.typ.name, t.TypeName())
}

func (o *objectVal) Equal(other ref.Val) ref.Val {
	ov, ok := other.(*objectVal)
	if !ok {
		return types.False
	}
	return types.Bool(ov.obj.typ == o.obj.typ && reflect.DeepEqual(ov.obj.fields, o.obj.fields))
}

func (o *objectVal) Type() ref.Type { return types.NewObjectType(o.obj.typ.name) }

func (o *objectVal) Value() any { return o.obj }
