package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/effectivelabs/trellis/schema"
)

// metaSchemaPrefix starts the locations of the JSON Schema meta-schema,
// which the format schema refers to for input and output schemas. Those
// are compiled one by one (see schemas.go), with sharper messages, so the
// format schema's findings inside them are not reported.
const metaSchemaPrefix = "https://json-schema.org/"

// formatSchema validates documents against schema/workflow.schema.json,
// the same JSON Schema editors use, so that the editor and the linter
// never disagree about what a valid file is.
type formatSchema struct {
	schema *jsonschema.Schema
	doc    any // the schema itself, to look up the properties a mapping allows
}

func newFormatSchema() (*formatSchema, error) {
	raw := schema.WorkflowSchema()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("the workflow format schema may not load %s", url)
	}
	if err := c.AddResource(schema.WorkflowSchemaURL, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("loading the workflow format schema: %w", err)
	}
	s, err := c.Compile(schema.WorkflowSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("compiling the workflow format schema: %w", err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decoding the workflow format schema: %w", err)
	}
	return &formatSchema{schema: s, doc: doc}, nil
}

// validate reports every way root violates the format schema. Each
// problem carries the keyword that failed as its rule, located where the
// semantic checks locate the same finding, so that List can drop the
// duplicate.
func (f *formatSchema) validate(root *Value, probs *Problems) {
	err := f.schema.Validate(root.JSON())
	if err == nil {
		return
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		probs.Add(root.Pos, "", "validating against the workflow format schema: %v", err)
		return
	}
	for _, leaf := range leaves(ve, nil) {
		if strings.HasPrefix(leaf.AbsoluteKeywordLocation, metaSchemaPrefix) {
			continue
		}
		f.report(root, leaf, probs)
	}
}

// leaves returns the innermost errors: the ones that say what is wrong
// rather than which subschema failed.
func leaves(ve *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return append(out, ve)
	}
	for _, c := range ve.Causes {
		out = leaves(c, out)
	}
	return out
}

func (f *formatSchema) report(root *Value, leaf *jsonschema.ValidationError, probs *Problems) {
	keywordPath := strings.Split(strings.TrimPrefix(leaf.KeywordLocation, "#"), "/")
	keyword := keywordPath[len(keywordPath)-1]
	at, field := root.Lookup(leaf.InstanceLocation)
	if at == nil {
		at = root
	}
	where := describePointer(leaf.InstanceLocation)
	switch {
	case keyword == "additionalProperties":
		for _, extra := range f.unknownKeys(at, leaf.AbsoluteKeywordLocation) {
			probs.addFromSchema(extra.KeyPos, keyword, fmt.Sprintf("unknown key %q in %s", extra.Key, where))
		}
	case slices.Contains(keywordPath, "propertyNames") && field != nil:
		// A key that is not a valid name: point at the key.
		probs.addFromSchema(field.KeyPos, keyword, fmt.Sprintf("%s: %s", where, leaf.Message))
	case keyword == "required":
		probs.addFromSchema(at.Pos, keyword, fmt.Sprintf("%s: %s", where, leaf.Message))
	case len(keywordPath) >= 2 && keywordPath[len(keywordPath)-2] == "properties" && field != nil:
		// A property whose schema is false: the key is not allowed here.
		probs.addFromSchema(field.KeyPos, "false", fmt.Sprintf("%s is not allowed here", where))
	case keyword == "uniqueItems":
		if dup := firstRepeat(at); dup != nil {
			probs.addFromSchema(dup.Pos, keyword, fmt.Sprintf("%s: %q is listed twice", where, dup.Str))
			return
		}
		probs.addFromSchema(at.Pos, keyword, fmt.Sprintf("%s: %s", where, leaf.Message))
	default:
		probs.addFromSchema(at.Pos, keyword, fmt.Sprintf("%s: %s", where, leaf.Message))
	}
}

// unknownKeys lists the entries of mapping m that the object schema at
// keywordURL (…/additionalProperties) does not declare.
func (f *formatSchema) unknownKeys(m *Value, keywordURL string) []*Field {
	_, frag, _ := strings.Cut(keywordURL, "#")
	obj, _ := lookupJSON(f.doc, strings.TrimSuffix(frag, "/additionalProperties")).(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	var out []*Field
	for _, field := range m.Fields {
		if _, ok := props[field.Key]; !ok {
			out = append(out, field)
		}
	}
	return out
}

// firstRepeat returns the first list item equal to an earlier one.
func firstRepeat(list *Value) *Value {
	seen := map[string]bool{}
	for _, item := range list.Items {
		text, err := item.CanonicalJSON()
		if err != nil {
			continue
		}
		if seen[text] {
			return item
		}
		seen[text] = true
	}
	return nil
}

// lookupJSON follows a JSON pointer through decoded JSON.
func lookupJSON(doc any, ptr string) any {
	cur := doc
	if ptr == "" {
		return cur
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[tok]
	}
	return cur
}

// describePointer renders a JSON pointer the way the file reads:
// /steps/2/retry/maxRetries becomes steps[2].retry.maxRetries.
func describePointer(ptr string) string {
	if ptr == "" {
		return "the workflow"
	}
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if tok != "" && strings.Trim(tok, "0123456789") == "" {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}
