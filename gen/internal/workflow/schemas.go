package workflow

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/effectivelabs/trellis/internal/suggest"
)

// schemaURL is the made-up location embedded schemas are compiled at.
const schemaURL = "trellis:///embedded.json"

// schema checks an input or output schema: it must be a mapping with
// type: object, use only JSON Schema keywords, point its $refs into its
// own $defs, and compile as a draft 2020-12 JSON Schema. Problems are
// reported at the offending keyword.
func (d *decoder) schema(v *Value, what string) *Schema {
	if v.Kind != KindMap {
		d.probs.Add(v.Pos, "type", "%s must be a JSON Schema mapping such as {type: object, properties: {...}}, not %s", what, v.Kind)
		return nil
	}
	s := &Schema{Value: v}
	text, err := v.CanonicalJSON()
	if err != nil {
		d.probs.Add(v.Pos, "", "%s cannot be encoded as JSON: %v", what, err)
		return s
	}
	s.JSON = text
	// Unknown keywords are reported, but the schema still means what its
	// known keywords say, so later checks go on using it.
	d.keywords(v, what, "", false)
	before := d.probs.Len()
	switch t := v.Get("type"); {
	case t == nil:
		d.probs.Add(v.Pos, "required", "%s has no type: it must be an object schema, add type: object", what)
	case t.Value.Kind != KindString || t.Value.Str != "object":
		d.probs.Add(t.Value.Pos, "const", "%s must be an object schema (type: object), not type: %s; to carry a single value, make it a property of an object", what, describeScalar(t.Value))
	}
	shape := d.probs.Len()
	d.refs(v, v, what)
	d.refLoops(v, what)
	d.compile(s, what, d.probs.Len() > shape)
	s.OK = d.probs.Len() == before
	return s
}

// keywords reports keys of the schema v (and its subschemas) that are not
// JSON Schema keywords. JSON Schema ignores unknown keywords, so a typo
// such as requried would silently make every property optional. Keys
// starting with x- are extensions and left alone, except Trellis's own
// (x-trellis-), which are checked (see sensitive). test names the
// keyword above v that only tests values (not, if, contains,
// propertyNames), if any; marked says an enclosing schema is marked
// sensitive.
func (d *decoder) keywords(v *Value, what, test string, marked bool) {
	if v.Kind != KindMap {
		return
	}
	known := schemaKeywords()
	if f := v.Get(sensitiveKeyword); f != nil {
		marked = d.sensitive(f, what, test, marked)
	}
	for _, f := range v.Fields {
		if strings.HasPrefix(f.Key, "x-trellis-") && f.Key != sensitiveKeyword {
			d.probs.Add(f.KeyPos, "", "unknown Trellis keyword %q in %s; the one Trellis reads is %q", f.Key, what, sensitiveKeyword)
			continue
		}
		if !contains(known, f.Key) && !strings.HasPrefix(f.Key, "x-") {
			msg := fmt.Sprintf("unknown JSON Schema keyword %q in %s; JSON Schema would ignore it", f.Key, what)
			guess := suggest.Closest(f.Key, known)
			if f.Key == "sensitive" {
				guess = sensitiveKeyword
			}
			if guess != "" {
				msg = fmt.Sprintf("unknown JSON Schema keyword %q in %s; did you mean %q? (JSON Schema would ignore it)", f.Key, what, guess)
			}
			d.probs.Add(f.KeyPos, "", "%s", msg)
			continue
		}
		inner := test
		switch f.Key {
		case "not", "if", "contains", "propertyNames":
			inner = f.Key
		}
		for _, sub := range Subschemas(f) {
			d.keywords(sub, what, inner, marked)
		}
	}
}

// sensitiveKeyword marks the values a schema describes as sensitive:
// Trellis shows them as [redacted] (spec.SensitiveKeyword).
const sensitiveKeyword = "x-trellis-sensitive"

// sensitive checks one x-trellis-sensitive keyword: a boolean, on a
// schema that describes values (not one that only tests them), and not
// false under a marked schema, which cannot unmark what it holds. It
// returns whether the schema is marked.
func (d *decoder) sensitive(f *Field, what, test string, marked bool) bool {
	if f.Value.Kind != KindBool {
		d.probs.Add(f.Value.Pos, "type", "%s in %s must be true or false, not %s", sensitiveKeyword, what, describeScalar(f.Value))
		return marked
	}
	switch {
	case test != "":
		d.probs.Add(f.KeyPos, "", "%s in %s means nothing under %s, which only tests values: mark the property itself", sensitiveKeyword, what, test)
	case marked && !f.Value.Bool:
		d.probs.Add(f.KeyPos, "", "%s: false in %s cannot unmark a value inside one marked sensitive: everything inside a marked value is redacted", sensitiveKeyword, what)
	}
	return marked || f.Value.Bool
}

// schemaKeywords are the keywords of JSON Schema draft 2020-12, and the
// draft-07 ones it still understands.
func schemaKeywords() []string {
	return []string{
		"$schema", "$id", "$ref", "$defs", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment",
		"definitions", "dependencies", "$recursiveRef", "$recursiveAnchor",
		"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
		"maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
		"maxProperties", "minProperties", "required", "dependentRequired",
		"properties", "patternProperties", "additionalProperties", "propertyNames",
		"items", "prefixItems", "additionalItems", "contains", "unevaluatedItems", "unevaluatedProperties",
		"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
		"format", "contentEncoding", "contentMediaType", "contentSchema",
		"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
	}
}

// refs checks every $ref in the schema v (within the document root): it
// must read "#/$defs/<name>" and name a definition of root. The runtime
// loads no other documents, so any other reference could never resolve.
func (d *decoder) refs(root, v *Value, what string) {
	if v.Kind != KindMap {
		return
	}
	for _, f := range v.Fields {
		if f.Key == "$ref" && f.Value.Kind == KindString {
			d.ref(root, f.Value, what)
			continue
		}
		for _, sub := range Subschemas(f) {
			d.refs(root, sub, what)
		}
	}
}

// Subschemas returns the subschemas held by one keyword of a schema
// (draft 2020-12): one for items or not, a mapping's values for
// properties or $defs, a list's items for allOf, none for keywords that
// hold data, such as enum or required.
func Subschemas(keyword *Field) []*Value {
	v := keyword.Value
	switch keyword.Key {
	case "items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
		"unevaluatedItems", "unevaluatedProperties", "additionalItems":
		return []*Value{v}
	case "properties", "$defs", "definitions", "patternProperties", "dependentSchemas":
		if v.Kind != KindMap {
			return nil
		}
		out := make([]*Value, len(v.Fields))
		for i, f := range v.Fields {
			out[i] = f.Value
		}
		return out
	case "allOf", "anyOf", "oneOf", "prefixItems":
		if v.Kind != KindList {
			return nil
		}
		return v.Items
	}
	return nil
}

// refLoops reports $defs entries that are $refs to each other in a loop
// (a -> b -> a): such a schema describes no value, and the compiler could
// only say "infinite loop".
func (d *decoder) refLoops(root *Value, what string) {
	f := root.Get("$defs")
	if f == nil || f.Value.Kind != KindMap {
		return
	}
	next := func(name string) (string, *Value) {
		def := f.Value.Get(name)
		if def == nil {
			return "", nil
		}
		ref := def.Value.Get("$ref")
		if ref == nil || ref.Value.Kind != KindString {
			return "", nil
		}
		target, _ := strings.CutPrefix(ref.Value.Str, "#/$defs/")
		return target, ref.Value
	}
	for i, start := range f.Value.Fields {
		chain := []string{start.Key}
		for name, _ := next(start.Key); name != ""; name, _ = next(name) {
			if name == start.Key {
				if loopStartsAt(f.Value, chain) == i {
					_, ref := next(start.Key)
					d.probs.Add(ref.Pos, "", "$defs/%s in %s only refers to itself ($ref loop %s -> %s), so it describes no value; give one of them a type", start.Key, what, strings.Join(chain, " -> "), start.Key)
				}
				break
			}
			if contains(chain, name) || len(chain) > len(f.Value.Fields) {
				break // a loop that does not pass through start
			}
			chain = append(chain, name)
		}
	}
}

// loopStartsAt returns the index in defs of the earliest-declared member
// of a loop, so that each loop is reported once.
func loopStartsAt(defs *Value, loop []string) int {
	for i, f := range defs.Fields {
		if contains(loop, f.Key) {
			return i
		}
	}
	return -1
}

func (d *decoder) ref(root, ref *Value, what string) {
	name, ok := strings.CutPrefix(ref.Str, "#/$defs/")
	if !ok || name == "" || strings.Contains(name, "/") {
		d.probs.Add(ref.Pos, "", "$ref %q in %s cannot be resolved: a reference must point into the schema's own $defs, such as \"#/$defs/address\"", ref.Str, what)
		return
	}
	name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	var defs []string
	if f := root.Get("$defs"); f != nil && f.Value.Kind == KindMap {
		if f.Value.Get(name) != nil {
			return
		}
		for _, def := range f.Value.Fields {
			defs = append(defs, def.Key)
		}
	}
	msg := fmt.Sprintf("$ref %q in %s names no definition: ", ref.Str, what)
	switch guess := suggest.Closest(name, defs); {
	case guess != "":
		msg += fmt.Sprintf("did you mean \"#/$defs/%s\"?", guess)
	case len(defs) == 0:
		msg += "the schema has no $defs at its top level"
	default:
		msg += "$defs has " + strings.Join(defs, ", ")
	}
	d.probs.Add(ref.Pos, "", "%s", msg)
}

// compile compiles the schema with the same library and draft the runtime
// validates inputs with, reporting what the meta-schema rejects at the
// offending keyword.
// When badRefs is true, unresolvable $refs were reported already, and the
// compiler's complaint about them is not repeated.
func (d *decoder) compile(s *Schema, what string, badRefs bool) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%s refers to %s; only references into its own $defs are supported", what, url)
	}
	if err := c.AddResource(schemaURL, strings.NewReader(s.JSON)); err != nil {
		d.probs.Add(s.Value.Pos, "", "%s is not a valid JSON Schema: %v", what, err)
		return
	}
	_, err := c.Compile(schemaURL)
	if err == nil {
		return
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		if !badRefs {
			d.probs.Add(s.Value.Pos, "", "%s is not a valid JSON Schema: %s", what, cleanSchemaError(err))
		}
		return
	}
	reported := map[string]bool{}
	for _, leaf := range leaves(ve, nil) {
		if reported[leaf.InstanceLocation] {
			continue // alternatives of one anyOf: the first says enough
		}
		reported[leaf.InstanceLocation] = true
		at, _ := s.Value.Lookup(leaf.InstanceLocation)
		if at == nil {
			at = s.Value
		}
		msg := leaf.Message
		if strings.HasSuffix(leaf.InstanceLocation, "/type") && at.Kind == KindString {
			jsonTypes := []string{"object", "array", "string", "integer", "number", "boolean", "null"}
			msg = fmt.Sprintf("%q is not a JSON Schema type; use one of %s", at.Str, strings.Join(jsonTypes, ", "))
			if guess := suggest.Closest(at.Str, jsonTypes); guess != "" {
				msg = fmt.Sprintf("%q is not a JSON Schema type; did you mean %q?", at.Str, guess)
			}
		}
		d.probs.Add(at.Pos, "", "invalid JSON Schema in %s at %s: %s", what, describeSchemaPointer(leaf.InstanceLocation), msg)
	}
}

// cleanSchemaError strips the library's prefixes and internal URL.
func cleanSchemaError(err error) string {
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, "compilation failed: "); ok {
		msg = rest
	}
	msg = strings.TrimPrefix(msg, "jsonschema: ")
	return strings.ReplaceAll(msg, schemaURL, "the schema")
}

// describeSchemaPointer renders a location within a schema:
// /properties/items/type becomes properties.items.type.
func describeSchemaPointer(ptr string) string {
	if ptr == "" {
		return "its top level"
	}
	return describePointer(ptr)
}

func describeScalar(v *Value) string {
	switch v.Kind {
	case KindString, KindNumber:
		return v.Str
	case KindBool:
		return fmt.Sprint(v.Bool)
	}
	return v.Kind.String()
}
