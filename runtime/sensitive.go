package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/effectivelabs/trellis/schema/spec"
)

// Sensitive data. A workflow's schemas mark the values Trellis must never
// show with the keyword SensitiveKeyword; what Trellis displays or emits
// (the operations API, and so the CLI and the dashboard; validation
// errors, and so logs, traces and the event log) passes through redact,
// which replaces every marked value with Redacted. Steps still receive,
// and the store still holds, the real values.

// SensitiveKeyword is the JSON Schema keyword that marks a value as
// sensitive (see spec.SensitiveKeyword).
const SensitiveKeyword = spec.SensitiveKeyword

// Redacted is what a sensitive value is shown as: a JSON string, in place
// of the value, whatever its type.
const Redacted = "[redacted]"

// maxRedactDepth bounds how deep redact follows a document: below it, a
// value that might hold something sensitive is redacted whole.
const maxRedactDepth = spec.MaxSensitiveDepth

// sensitiveMeta is the meta-schema of SensitiveKeyword: a boolean.
const sensitiveMeta = `{"properties":{"` + SensitiveKeyword + `":{"type":"boolean"}}}`

// sensitiveExt compiles SensitiveKeyword; a compiled schema carries
// sensitiveMark in its Extensions when the keyword is true.
type sensitiveExt struct{}

type sensitiveMark struct{}

func (sensitiveExt) Compile(_ jsonschema.CompilerContext, m map[string]any) (jsonschema.ExtSchema, error) {
	v, present := m[SensitiveKeyword]
	if !present {
		return nil, nil
	}
	b, ok := v.(bool)
	if !ok {
		return nil, fmt.Errorf("%s must be true or false, not %s", SensitiveKeyword, quoteShort(v))
	}
	if b {
		return sensitiveMark{}, nil
	}
	return nil, nil
}

// Validate implements jsonschema.ExtSchema: the mark constrains nothing.
func (sensitiveMark) Validate(jsonschema.ValidationContext, any) error { return nil }

// registerSensitive teaches a compiler SensitiveKeyword.
func registerSensitive(c *jsonschema.Compiler) error {
	meta, err := jsonschema.CompileString("trellis:///sensitive-keyword.json", sensitiveMeta)
	if err != nil {
		return err
	}
	c.RegisterExtension(SensitiveKeyword, meta, sensitiveExt{})
	return nil
}

func marked(s *jsonschema.Schema) bool {
	_, ok := s.Extensions[SensitiveKeyword].(sensitiveMark)
	return ok
}

// taint finds the schemas under root that are marked or lead to a marked
// one, through any keyword: redact need only look inside values those
// describe. It returns nil when nothing is marked.
func taint(root *jsonschema.Schema) map[*jsonschema.Schema]bool {
	parents := map[*jsonschema.Schema][]*jsonschema.Schema{}
	var marks []*jsonschema.Schema
	seen := map[*jsonschema.Schema]bool{root: true}
	stack := []*jsonschema.Schema{root}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if marked(s) {
			marks = append(marks, s)
		}
		for _, sub := range subschemas(s) {
			parents[sub] = append(parents[sub], s)
			if !seen[sub] {
				seen[sub] = true
				stack = append(stack, sub)
			}
		}
	}
	if len(marks) == 0 {
		return nil
	}
	tainted := map[*jsonschema.Schema]bool{}
	for len(marks) > 0 {
		s := marks[len(marks)-1]
		marks = marks[:len(marks)-1]
		if tainted[s] {
			continue
		}
		tainted[s] = true
		marks = append(marks, parents[s]...)
	}
	return tainted
}

// subschemas lists the schemas s holds or refers to that describe the
// same value or a value inside it (not those that only test it: not, if,
// contains, propertyNames).
func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(subs ...*jsonschema.Schema) {
		for _, sub := range subs {
			if sub != nil {
				out = append(out, sub)
			}
		}
	}
	add(inPlace(s)...)
	for _, sub := range s.Properties {
		add(sub)
	}
	for _, sub := range s.PatternProperties {
		add(sub)
	}
	if sub, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		add(sub)
	}
	add(s.UnevaluatedProperties)
	add(s.PrefixItems...)
	add(s.Items2020, s.UnevaluatedItems)
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		add(items)
	case []*jsonschema.Schema:
		add(items...)
	}
	if sub, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		add(sub)
	}
	return out
}

// inPlace lists the schemas s applies to the very value it describes:
// references and combinators. Both branches of an if apply, as either
// may.
func inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	out := make([]*jsonschema.Schema, 0, 4)
	for _, sub := range []*jsonschema.Schema{s.Ref, s.DynamicRef, s.RecursiveRef, s.Then, s.Else} {
		if sub != nil {
			out = append(out, sub)
		}
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, sub := range s.DependentSchemas {
		out = append(out, sub)
	}
	return out
}

// redactor rewrites one document, following the schemas that describe
// each of its values.
type redactor struct {
	tainted map[*jsonschema.Schema]bool
	dec     *json.Decoder
	out     bytes.Buffer
}

// redact returns doc with every value a schema marks sensitive replaced by
// the JSON string Redacted, its structure and every other value kept. A
// document the schema does not describe (an older version's, or invalid
// data) is redacted as far as the schema reaches: a property the schema
// marks is redacted whatever its type. A document that is not JSON, or
// nests deeper than maxRedactDepth where something could be marked, is
// redacted whole. list says doc is a list of values of the schema (the
// output of a map step).
func (s *schema) redact(doc []byte, list bool) []byte {
	if s == nil || s.tainted == nil || len(doc) == 0 {
		return doc
	}
	r := &redactor{tainted: s.tainted, dec: json.NewDecoder(bytes.NewReader(doc))}
	r.dec.UseNumber()
	var err error
	if list {
		err = r.list(func(int) []*jsonschema.Schema { return []*jsonschema.Schema{s.compiled} }, 0, true)
	} else {
		err = r.value([]*jsonschema.Schema{s.compiled}, 0)
	}
	if err == nil {
		if _, extra := r.dec.Token(); extra != io.EOF {
			err = errors.New("data after the document")
		}
	}
	if err != nil {
		return []byte(strconv.Quote(Redacted))
	}
	return r.out.Bytes()
}

// value copies the next value of the document, which the schemas set
// describe.
func (r *redactor) value(set []*jsonschema.Schema, depth int) error {
	set, sensitive, relevant := r.expand(set)
	if !relevant { // nothing below is marked: copy it as it is
		var raw json.RawMessage
		if err := r.dec.Decode(&raw); err != nil {
			return err
		}
		r.out.Write(raw)
		return nil
	}
	if sensitive || depth >= maxRedactDepth {
		var skip json.RawMessage
		if err := r.dec.Decode(&skip); err != nil {
			return err
		}
		r.out.WriteString(strconv.Quote(Redacted))
		return nil
	}
	tok, err := r.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return r.object(set, depth)
	case json.Delim('['):
		return r.list(func(i int) []*jsonschema.Schema { return itemSchemas(set, i) }, depth, false)
	}
	return r.scalar(tok)
}

// object copies the rest of an object whose '{' was read.
func (r *redactor) object(set []*jsonschema.Schema, depth int) error {
	r.out.WriteByte('{')
	for first := true; r.dec.More(); first = false {
		tok, err := r.dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return errors.New("object key is not a string")
		}
		if !first {
			r.out.WriteByte(',')
		}
		r.scalar(key) //nolint:errcheck // a string always encodes
		r.out.WriteByte(':')
		if err := r.value(propertySchemas(set, key), depth+1); err != nil {
			return err
		}
	}
	if _, err := r.dec.Token(); err != nil { // '}'
		return err
	}
	r.out.WriteByte('}')
	return nil
}

// list copies an array, whose '[' was read unless open says to read it;
// items gives the schemas of item i.
func (r *redactor) list(items func(int) []*jsonschema.Schema, depth int, open bool) error {
	if open {
		if tok, err := r.dec.Token(); err != nil {
			return err
		} else if tok != json.Delim('[') {
			return errors.New("not a list")
		}
	}
	r.out.WriteByte('[')
	for i := 0; r.dec.More(); i++ {
		if i > 0 {
			r.out.WriteByte(',')
		}
		if err := r.value(items(i), depth+1); err != nil {
			return err
		}
	}
	if _, err := r.dec.Token(); err != nil { // ']'
		return err
	}
	r.out.WriteByte(']')
	return nil
}

func (r *redactor) scalar(tok json.Token) error {
	switch v := tok.(type) {
	case json.Number:
		r.out.WriteString(v.String())
		return nil
	case json.Delim:
		return errors.New("unexpected " + v.String())
	}
	enc := json.NewEncoder(&r.out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tok); err != nil {
		return err
	}
	r.out.Truncate(r.out.Len() - 1) // Encode's newline
	return nil
}

// expand adds to set the schemas its members apply in place, keeping those
// that lead to a marked schema; it reports whether one of them is marked,
// and whether any lead to one.
func (r *redactor) expand(set []*jsonschema.Schema) (out []*jsonschema.Schema, sensitive, relevant bool) {
	seen := map[*jsonschema.Schema]bool{}
	for len(set) > 0 {
		s := set[len(set)-1]
		set = set[:len(set)-1]
		if s == nil || seen[s] || !r.tainted[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
		if marked(s) {
			sensitive = true
		}
		set = append(set, inPlace(s)...)
	}
	return out, sensitive, len(out) > 0
}

// propertySchemas are the schemas of property key of an object that set
// describes.
func propertySchemas(set []*jsonschema.Schema, key string) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, s := range set {
		matched := false
		if sub, ok := s.Properties[key]; ok {
			out, matched = append(out, sub), true
		}
		for re, sub := range s.PatternProperties {
			if re.MatchString(key) {
				out, matched = append(out, sub), true
			}
		}
		if !matched {
			if sub, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
				out = append(out, sub)
			}
			if s.UnevaluatedProperties != nil {
				out = append(out, s.UnevaluatedProperties)
			}
		}
	}
	return out
}

// itemSchemas are the schemas of item i of an array that set describes.
func itemSchemas(set []*jsonschema.Schema, i int) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, s := range set {
		switch {
		case i < len(s.PrefixItems):
			out = append(out, s.PrefixItems[i])
		case s.Items2020 != nil:
			out = append(out, s.Items2020)
		}
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			out = append(out, items)
		case []*jsonschema.Schema:
			if i < len(items) {
				out = append(out, items[i])
			} else if sub, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
				out = append(out, sub)
			}
		}
		if s.UnevaluatedItems != nil {
			out = append(out, s.UnevaluatedItems)
		}
	}
	return out
}

// sensitiveAt reports whether the value at a JSON pointer (/card/number)
// of a document is sensitive: marked, or inside a marked value.
func (s *schema) sensitiveAt(instance any, ptr string) bool {
	if s == nil || s.tainted == nil {
		return false
	}
	r := &redactor{tainted: s.tainted}
	set := []*jsonschema.Schema{s.compiled}
	node := instance
	toks := pointerTokens(ptr)
	for i := 0; ; i++ {
		var sensitive, relevant bool
		set, sensitive, relevant = r.expand(set)
		switch {
		case sensitive:
			return true
		case !relevant || i == len(toks):
			return false
		}
		switch n := node.(type) {
		case map[string]any:
			set, node = propertySchemas(set, toks[i]), n[toks[i]]
		case []any:
			idx, err := strconv.Atoi(toks[i])
			if err != nil || idx < 0 {
				return true // cannot tell: say nothing
			}
			set = itemSchemas(set, idx)
			if idx < len(n) {
				node = n[idx]
			}
		default:
			return true
		}
	}
}

// RedactInput returns a run input of this version with every value its
// input schema marks sensitive (SensitiveKeyword) replaced by Redacted:
// what to show of the input. The run and its steps keep the real values.
func (d *Definition) RedactInput(input json.RawMessage) json.RawMessage {
	return d.input.redact(input, false)
}

// RedactOutput returns the output of step i (numbered as StepNames) with
// every value its output schema marks sensitive replaced by Redacted; for
// a map step, whose output is the list of its items' outputs, in each
// item. An output of an unknown step is returned as it is.
func (d *Definition) RedactOutput(i int, output json.RawMessage) json.RawMessage {
	if i < 0 || i >= len(d.outputs) || d.outputs[i] == nil { // the failure handler has none
		return output
	}
	return d.outputs[i].redact(output, d.spec.Steps[i].IsMap())
}

// RedactEvent returns a payload of the named event with every value the
// event's schema marks sensitive replaced by Redacted. A payload of an
// event this version does not declare is returned as it is.
func (d *Definition) RedactEvent(event string, payload json.RawMessage) json.RawMessage {
	return d.events[event].redact(payload, false)
}

// HasSensitive reports whether any schema of this version marks a value
// sensitive.
func (d *Definition) HasSensitive() bool {
	if d.input.tainted != nil {
		return true
	}
	for _, s := range d.outputs {
		if s != nil && s.tainted != nil {
			return true
		}
	}
	for _, s := range d.events {
		if s.tainted != nil {
			return true
		}
	}
	return false
}

// WithoutSensitive returns a JSON Schema without the properties whose
// values it marks sensitive (see spec.WithoutSensitive): what a run
// filter may read.
func WithoutSensitive(schemaJSON json.RawMessage) (json.RawMessage, error) {
	return spec.WithoutSensitive(schemaJSON)
}
