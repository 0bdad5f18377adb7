package condition

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/google/cel-go/common/types"
)

// kind is the shape of a JSON value as a JSON Schema describes it.
type kind int

const (
	kindDyn kind = iota // unknown shape: values pass through as CEL dyn
	kindBool
	kindInt
	kindDouble
	kindString
	kindTimestamp
	kindList
	kindMap
	kindObject
)

// shape is the CEL view of one JSON Schema: its CEL type, and how to turn a
// decoded JSON value into the matching CEL-native value.
type shape struct {
	kind   kind
	cel    *types.Type
	elem   *shape            // list items and map values
	object *objectType       // for kindObject
	ref    string            // unresolved "#/$defs/X" reference, filled in by resolve
	defs   map[string]*shape // the document's $defs, for ref resolution
}

// objectType is a JSON object with declared properties, exposed to CEL as a
// named struct type so that field names are checked at compile time.
type objectType struct {
	name   string
	fields map[string]*shape
	order  []string
	// schema is the JSON Schema node the type was built from, with the
	// $defs of its document, so that a value of the type can be described
	// again (see ListExpr).
	schema map[string]any
	defs   map[string]any
}

// schemaDoc is one JSON Schema document with its own $defs.
type schemaDoc struct {
	root *shape
	defs map[string]*shape
	raw  map[string]any // the $defs as written
}

// builder turns JSON Schema documents into shapes, naming object types by
// their path so that each has a stable, readable CEL type name.
type builder struct {
	objects map[string]*objectType
}

func newBuilder() *builder {
	return &builder{objects: map[string]*objectType{}}
}

// document parses one JSON Schema (raw JSON) rooted at the CEL type name
// prefix. An empty schema yields an object type with no fields.
func (b *builder) document(prefix string, raw json.RawMessage) (*shape, error) {
	if len(raw) == 0 {
		obj := &objectType{name: prefix, fields: map[string]*shape{}}
		b.objects[prefix] = obj
		return &shape{kind: kindObject, cel: types.NewObjectType(prefix), object: obj}, nil
	}
	var node map[string]any
	if err := json.Unmarshal(raw, &node); err != nil {
		return nil, fmt.Errorf("schema %s is not a JSON object: %w", prefix, err)
	}
	doc := &schemaDoc{defs: map[string]*shape{}}
	doc.raw, _ = node["$defs"].(map[string]any)
	if defs, ok := node["$defs"].(map[string]any); ok {
		names := make([]string, 0, len(defs))
		for name := range defs {
			names = append(names, name)
		}
		sort.Strings(names)
		// Create every definition before filling any, so that definitions may
		// refer to each other (and to themselves).
		for _, name := range names {
			doc.defs[name] = &shape{}
		}
		for _, name := range names {
			def, _ := defs[name].(map[string]any)
			*doc.defs[name] = *b.node(prefix+".defs."+name, def, doc)
		}
	}
	doc.root = b.node(prefix, node, doc)
	if err := resolve(doc.root, map[*shape]bool{}); err != nil {
		return nil, err
	}
	return doc.root, nil
}

func (b *builder) node(name string, node map[string]any, doc *schemaDoc) *shape {
	if node == nil {
		return dynShape()
	}
	if ref, ok := node["$ref"].(string); ok {
		return &shape{ref: ref, defs: doc.defs}
	}
	typ, _ := node["type"].(string)
	switch typ {
	case "boolean":
		return &shape{kind: kindBool, cel: types.BoolType}
	case "integer":
		return &shape{kind: kindInt, cel: types.IntType}
	case "number":
		return &shape{kind: kindDouble, cel: types.DoubleType}
	case "string":
		if format, _ := node["format"].(string); format == "date-time" {
			return &shape{kind: kindTimestamp, cel: types.TimestampType}
		}
		return &shape{kind: kindString, cel: types.StringType}
	case "array":
		items, _ := node["items"].(map[string]any)
		elem := b.node(name+".items", items, doc)
		return &shape{kind: kindList, elem: elem}
	case "object":
		props, hasProps := node["properties"].(map[string]any)
		if !hasProps {
			if extra, ok := node["additionalProperties"].(map[string]any); ok {
				return &shape{kind: kindMap, elem: b.node(name+".values", extra, doc)}
			}
		}
		obj := &objectType{name: name, fields: map[string]*shape{}, schema: node, defs: doc.raw}
		for field := range props {
			obj.order = append(obj.order, field)
		}
		sort.Strings(obj.order)
		for _, field := range obj.order {
			child, _ := props[field].(map[string]any)
			obj.fields[field] = b.node(name+"."+field, child, doc)
		}
		b.objects[name] = obj
		return &shape{kind: kindObject, cel: types.NewObjectType(name), object: obj}
	}
	return dynShape()
}

func dynShape() *shape { return &shape{kind: kindDyn, cel: types.DynType} }

// resolve replaces $ref shapes by their definitions and computes the CEL
// types of lists and maps, whose element types are only known afterwards.
func resolve(s *shape, seen map[*shape]bool) error {
	if seen[s] {
		return nil
	}
	seen[s] = true
	if s.ref != "" {
		name, ok := strings.CutPrefix(s.ref, "#/$defs/")
		def := s.defs[name]
		if !ok || def == nil {
			return fmt.Errorf("$ref %q does not name a definition in $defs", s.ref)
		}
		if err := resolve(def, seen); err != nil {
			return err
		}
		if def.cel == nil {
			// A definition that is only an alias of itself has no shape.
			*s = *dynShape()
			return nil
		}
		*s = *def
		return nil
	}
	switch s.kind {
	case kindList, kindMap:
		if err := resolve(s.elem, seen); err != nil {
			return err
		}
		if s.elem.cel == nil {
			s.elem.cel = types.DynType
		}
		if s.kind == kindList {
			s.cel = types.NewListType(s.elem.cel)
		} else {
			s.cel = types.NewMapType(types.StringType, s.elem.cel)
		}
	case kindObject:
		for _, field := range s.object.order {
			if err := resolve(s.object.fields[field], seen); err != nil {
				return err
			}
		}
	}
	return nil
}
