package golang

import (
	"fmt"
	"strings"

	"github.com/effectivelabs/trellis/gen/internal/workflow"
)

// typeKind says what a Go type expression is.
type typeKind int

const (
	kindBuiltin typeKind = iota // string, int64, float64, bool
	kindTime                    // time.Time
	kindSlice
	kindMap // map[string]elem
	kindNamed
)

// goType is a Go type expression a schema maps to.
type goType struct {
	kind    typeKind
	builtin string     // for kindBuiltin
	elem    *goType    // for kindSlice and kindMap
	named   *namedType // for kindNamed
}

// nilable reports whether the zero value of t is nil (slices and maps,
// also behind a named type). Optional properties of such types need no
// pointer: omitempty leaves a nil slice or map out.
func (t *goType) nilable() bool {
	switch t.kind {
	case kindSlice, kindMap:
		return true
	case kindNamed:
		return t.named.kind == namedOther && t.named.under != nil && t.named.under.nilable()
	}
	return false
}

// namedKind says what a generated named type declares.
type namedKind int

const (
	namedStruct namedKind = iota
	namedEnum             // a string type with one constant per value
	namedOther            // a defined type over another type (a slice, a map, a $ref ...)
)

// namedType is a type the generator declares.
type namedType struct {
	name string
	// doc is the doc comment, without the leading //.
	doc  string
	pos  workflow.Pos
	kind namedKind
	// fields of a struct, in the order the schema lists its properties.
	fields []*field
	// values of an enum, in schema order.
	values []enumValue
	// under is the underlying type of namedOther.
	under *goType
}

type field struct {
	name     string // Go name
	json     string // property name
	doc      string
	typ      *goType
	required bool
	pos      workflow.Pos
}

// pointer reports whether the field is a pointer: optional properties are,
// unless their type is already nilable.
func (f *field) pointer() bool { return !f.required && !f.typ.nilable() }

type enumValue struct {
	name  string // Go constant name
	value string
	pos   workflow.Pos
}

// mapper maps the JSON Schemas of one workflow to Go types. A schema it
// cannot map faithfully is a problem at that schema, never an any.
type mapper struct {
	probs *workflow.Problems
	types []*namedType // in the order they are declared
	defs  map[string]*namedType
	// defsOf describes where the current document's $defs live, for docs
	// ("the input", "the output of step charge").
	defsOf string
}

// document maps one input or output schema: the root becomes the named
// type name, each $defs entry the named type defPrefix+<Def>.
func (m *mapper) document(s *workflow.Schema, name, doc, path, defPrefix, defsOf string) *namedType {
	m.defs = map[string]*namedType{}
	m.defsOf = defsOf
	root := s.Value
	var defs []*workflow.Field
	if f := root.Get("$defs"); f != nil && f.Value.Kind == workflow.KindMap {
		defs = f.Value.Fields
	}
	for _, def := range defs {
		n := goName(def.Key)
		if n == "" {
			m.probs.Add(def.KeyPos, "", "$defs/%s: the name has no letters or digits to build a Go type name from; rename it", def.Key)
			continue
		}
		m.defs[def.Key] = &namedType{name: defPrefix + n, pos: def.KeyPos}
	}
	t := &namedType{name: name, doc: withDescription(doc, root), pos: root.Pos}
	m.types = append(m.types, t)
	m.fill(t, root, path, true)
	for _, def := range defs {
		dt := m.defs[def.Key]
		if dt == nil {
			continue
		}
		dt.doc = withDescription(fmt.Sprintf("%s is the $defs/%s schema of %s.", dt.name, def.Key, defsOf), def.Value)
		m.types = append(m.types, dt)
		m.fill(dt, def.Value, fmt.Sprintf("$defs/%s of %s", def.Key, defsOf), false)
	}
	return t
}

// fill declares t from schema v: a struct for an object with properties,
// a string type with constants for a string enum, otherwise a defined type
// over what v maps to. root allows an object without properties (an
// input or output that carries nothing) to become an empty struct.
func (m *mapper) fill(t *namedType, v *workflow.Value, path string, root bool) {
	if v.Kind == workflow.KindMap && v.Get("$ref") == nil && m.supported(v, path) {
		typ := v.Get("type")
		isObject := typ != nil && typ.Value.Kind == workflow.KindString && typ.Value.Str == "object"
		switch {
		case isObject && v.Get("properties") != nil:
			m.structOf(t, v, path)
			return
		case isObject && root && !hasSchema(v, "additionalProperties"):
			t.kind = namedStruct
			return
		case v.Get("enum") != nil:
			m.enumOf(t, v, path)
			return
		}
	}
	t.kind = namedOther
	t.under = m.typeOf(v, t.name, path)
}

// typeOf returns the Go type of the schema v found at path. name is the
// name to give a named type v needs (a nested struct or enum). It returns
// nil, and reports why, when v cannot be mapped.
func (m *mapper) typeOf(v *workflow.Value, name, path string) *goType {
	if v.Kind != workflow.KindMap {
		m.probs.Add(v.Pos, "", "%s: a schema of %s cannot be mapped to a Go type; write a schema with a type", path, v.Kind)
		return nil
	}
	if !m.supported(v, path) {
		return nil
	}
	if ref := v.Get("$ref"); ref != nil {
		return m.refType(ref.Value, path)
	}
	if v.Get("enum") != nil {
		t := &namedType{name: name, pos: v.Pos}
		m.types = append(m.types, t)
		m.enumOf(t, v, path)
		return &goType{kind: kindNamed, named: t}
	}
	typ := v.Get("type")
	if typ == nil {
		m.probs.Add(v.Pos, "", "%s: the schema has no type, so it cannot be mapped to a Go type; add type: string, integer, number, boolean, array or object", path)
		return nil
	}
	if typ.Value.Kind != workflow.KindString {
		m.probs.Add(typ.Value.Pos, "", "%s: a list of types cannot be mapped to one Go type; use a single type (to allow absence, leave the property out of required instead of allowing null)", path)
		return nil
	}
	switch typ.Value.Str {
	case "string":
		if f := v.Get("format"); f != nil && f.Value.Kind == workflow.KindString && f.Value.Str == "date-time" {
			return &goType{kind: kindTime}
		}
		return builtin("string")
	case "integer":
		return builtin("int64")
	case "number":
		return builtin("float64")
	case "boolean":
		return builtin("bool")
	case "array":
		return m.arrayOf(v, name, path)
	case "object":
		return m.objectOf(v, name, path)
	}
	m.probs.Add(typ.Value.Pos, "", "%s: type %s cannot be mapped to a Go type; leave the property out of required to allow absence", path, typ.Value.Str)
	return nil
}

func builtin(name string) *goType { return &goType{kind: kindBuiltin, builtin: name} }

func (m *mapper) arrayOf(v *workflow.Value, name, path string) *goType {
	items := v.Get("items")
	if items == nil || items.Value.Kind != workflow.KindMap {
		m.probs.Add(v.Pos, "", "%s: an array without an items schema cannot be mapped to a Go slice; add items: {type: ...}", path)
		return nil
	}
	elem := m.typeOf(items.Value, name+"Item", path+"[]")
	if elem == nil {
		return nil
	}
	return &goType{kind: kindSlice, elem: elem}
}

func (m *mapper) objectOf(v *workflow.Value, name, path string) *goType {
	if v.Get("properties") != nil {
		t := &namedType{name: name, pos: v.Pos, doc: withDescription(fmt.Sprintf("%s is %s.", name, path), v)}
		m.types = append(m.types, t)
		m.structOf(t, v, path)
		return &goType{kind: kindNamed, named: t}
	}
	if ap := v.Get("additionalProperties"); ap != nil && ap.Value.Kind == workflow.KindMap {
		elem := m.typeOf(ap.Value, name+"Value", path+".*")
		if elem == nil {
			return nil
		}
		return &goType{kind: kindMap, elem: elem}
	}
	m.probs.Add(v.Pos, "", "%s: an object without properties cannot be mapped to a Go type; declare its properties, or describe a map with additionalProperties: {type: ...}", path)
	return nil
}

func (m *mapper) structOf(t *namedType, v *workflow.Value, path string) {
	t.kind = namedStruct
	if t.doc == "" {
		t.doc = withDescription(fmt.Sprintf("%s is %s.", t.name, path), v)
	}
	if ap := v.Get("additionalProperties"); ap != nil && ap.Value.Kind == workflow.KindMap {
		m.probs.Add(ap.KeyPos, "", "%s: an object with both properties and an additionalProperties schema cannot be mapped to a Go struct; drop additionalProperties, or move the extra entries into a property that is a map", path)
	}
	props := v.Get("properties")
	if props == nil || props.Value.Kind != workflow.KindMap {
		return
	}
	required := map[string]bool{}
	if r := v.Get("required"); r != nil && r.Value.Kind == workflow.KindList {
		for _, item := range r.Value.Items {
			if item.Kind != workflow.KindString {
				continue
			}
			if props.Value.Get(item.Str) == nil {
				m.probs.Add(item.Pos, "", "%s: required lists %q, which is not a property%s", path, item.Str, propertyHint(item.Str, props.Value))
				continue
			}
			required[item.Str] = true
		}
	}
	byName := map[string]*field{}
	for _, p := range props.Value.Fields {
		fpath := path + "." + p.Key
		name := fieldName(p.Key)
		switch {
		case name == "":
			m.probs.Add(p.KeyPos, "", "%s: the property name has no letters or digits to build a Go field name from; rename it", fpath)
			continue
		case !validTagName(p.Key):
			m.probs.Add(p.KeyPos, "", "%s: encoding/json cannot use %q as a field name (it allows letters, digits, spaces and punctuation other than quotes, backslashes and commas); rename the property", fpath, p.Key)
			continue
		}
		if other, dup := byName[name]; dup {
			m.probs.Add(p.KeyPos, "", "%s: properties %q and %q both become Go field %s.%s; rename one of them", fpath, other.json, p.Key, t.name, name)
			continue
		}
		f := &field{name: name, json: p.Key, required: required[p.Key], pos: p.KeyPos, doc: description(p.Value)}
		byName[name] = f
		f.typ = m.typeOf(p.Value, t.name+name, fpath)
		if f.typ != nil {
			t.fields = append(t.fields, f)
		}
	}
}

func propertyHint(name string, props *workflow.Value) string {
	var keys []string
	for _, f := range props.Fields {
		keys = append(keys, f.Key)
	}
	for _, k := range keys {
		if strings.EqualFold(k, name) {
			return fmt.Sprintf("; did you mean %q?", k)
		}
	}
	return ""
}

func (m *mapper) enumOf(t *namedType, v *workflow.Value, path string) {
	t.kind = namedEnum
	t.doc = withDescription(fmt.Sprintf("%s is one of the allowed values of %s.", t.name, path), v)
	e := v.Get("enum")
	if typ := v.Get("type"); typ != nil && (typ.Value.Kind != workflow.KindString || typ.Value.Str != "string") {
		m.probs.Add(e.KeyPos, "", "%s: only enums of strings can be mapped to Go constants; use string values, or drop the enum and check the value in code", path)
		return
	}
	if e.Value.Kind != workflow.KindList || len(e.Value.Items) == 0 {
		m.probs.Add(e.KeyPos, "", "%s: enum must be a non-empty list of strings", path)
		return
	}
	seen := map[string]string{}
	for _, item := range e.Value.Items {
		if item.Kind != workflow.KindString {
			m.probs.Add(item.Pos, "", "%s: enum value %s is not a string; only enums of strings can be mapped to Go constants", path, describe(item))
			continue
		}
		suffix := goName(item.Str)
		if item.Str == "" {
			suffix = "Empty"
		}
		if suffix == "" {
			m.probs.Add(item.Pos, "", "%s: enum value %q has no letters or digits to build a Go constant name from", path, item.Str)
			continue
		}
		name := t.name + suffix
		if other, dup := seen[name]; dup {
			m.probs.Add(item.Pos, "", "%s: enum values %q and %q both become Go constant %s; rename one of them", path, other, item.Str, name)
			continue
		}
		seen[name] = item.Str
		t.values = append(t.values, enumValue{name: name, value: item.Str, pos: item.Pos})
	}
}

func describe(v *workflow.Value) string {
	switch v.Kind {
	case workflow.KindNumber:
		return v.Str
	case workflow.KindBool:
		return fmt.Sprint(v.Bool)
	case workflow.KindString:
		return fmt.Sprintf("%q", v.Str)
	}
	return v.Kind.String()
}

func (m *mapper) refType(ref *workflow.Value, path string) *goType {
	name, ok := strings.CutPrefix(ref.Str, "#/$defs/")
	if ok {
		name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	}
	def := m.defs[name]
	if !ok || def == nil {
		m.probs.Add(ref.Pos, "", "%s: $ref %q cannot be mapped; a reference must name an entry of the schema's own $defs", path, ref.Str)
		return nil
	}
	return &goType{kind: kindNamed, named: def}
}

// supported reports the keywords no Go type can express: alternatives
// (oneOf, anyOf, allOf), tuples (prefixItems), pattern-keyed maps and
// nested $defs.
func (m *mapper) supported(v *workflow.Value, path string) bool {
	ok := true
	for _, f := range v.Fields {
		switch f.Key {
		case "oneOf", "anyOf", "allOf":
			m.probs.Add(f.KeyPos, "", "%s: %s cannot be mapped to a Go type; describe one object with optional properties instead", path, f.Key)
			ok = false
		case "prefixItems":
			m.probs.Add(f.KeyPos, "", "%s: tuples (prefixItems) cannot be mapped to a Go type; use an array of one item type, or an object", path)
			ok = false
		case "patternProperties":
			m.probs.Add(f.KeyPos, "", "%s: patternProperties cannot be mapped to a Go type; use additionalProperties for a map", path)
			ok = false
		}
	}
	return ok
}

func hasSchema(v *workflow.Value, key string) bool {
	f := v.Get(key)
	return f != nil && f.Value.Kind == workflow.KindMap
}

// description returns the schema's description, if it has one.
func description(v *workflow.Value) string {
	if f := v.Get("description"); f != nil && f.Value.Kind == workflow.KindString {
		return strings.TrimSpace(f.Value.Str)
	}
	return ""
}

// withDescription appends the schema's description to a doc comment as a
// paragraph of its own.
func withDescription(doc string, v *workflow.Value) string {
	if d := description(v); d != "" {
		return doc + "\n\n" + d
	}
	return doc
}
