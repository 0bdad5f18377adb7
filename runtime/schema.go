package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// schema is a compiled JSON Schema and the document it was compiled from,
// which names the properties a "required" keyword lists.
type schema struct {
	compiled *jsonschema.Schema
	doc      any
}

// compileSchema compiles a schema given as JSON text; an empty text is the
// schema of any object.
func compileSchema(name, text string) (*schema, error) {
	if strings.TrimSpace(text) == "" {
		text = `{"type":"object"}`
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("schema refers to %s; only references into $defs of the same schema are supported", s)
	}
	url := "trellis:///" + name + ".json"
	if err := c.AddResource(url, strings.NewReader(text)); err != nil {
		return nil, err
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	return &schema{compiled: compiled, doc: doc}, nil
}

// problems validates a JSON document and returns every problem, sorted by
// the path of the offending value under root (input.items[0].sku,
// output.score). A missing required property is named by its own path.
func (s *schema) problems(root string, data []byte) ([]FieldProblem, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		//nolint:nilerr // invalid JSON is a problem of the document, reported like the others, not a failure to validate
		return []FieldProblem{{Field: root, Message: "not valid JSON: " + err.Error()}}, nil
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []FieldProblem
	s.collect(ve, root, v, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out, nil
}

func (s *schema) collect(ve *jsonschema.ValidationError, root string, instance any, out *[]FieldProblem) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			s.collect(c, root, instance, out)
		}
		return
	}
	if strings.HasSuffix(ve.KeywordLocation, "/required") {
		if missing := s.missing(ve, instance); len(missing) > 0 {
			for _, name := range missing {
				*out = append(*out, FieldProblem{Field: elide(fieldPath(root, ve.InstanceLocation)+pathStep(name), maxProblemBytes), Message: "is required but missing"})
			}
			return
		}
	}
	// The validator's messages may quote the value (a format's does), and
	// the path its keys: either may be huge.
	*out = append(*out, FieldProblem{Field: elide(fieldPath(root, ve.InstanceLocation), maxProblemBytes), Message: elide(ve.Message, maxProblemBytes)})
}

// maxProblemBytes bounds a FieldProblem's field and message.
const maxProblemBytes = 256

// missing lists the properties a failed "required" keyword names that the
// object it was checked on lacks.
func (s *schema) missing(ve *jsonschema.ValidationError, instance any) []string {
	_, fragment, ok := strings.Cut(ve.AbsoluteKeywordLocation, "#")
	if !ok {
		return nil
	}
	required, _ := pointer(s.doc, fragment).([]any)
	object, _ := pointer(instance, ve.InstanceLocation).(map[string]any)
	if object == nil {
		return nil
	}
	var out []string
	for _, r := range required {
		if name, ok := r.(string); ok {
			if _, present := object[name]; !present {
				out = append(out, name)
			}
		}
	}
	return out
}

// pointer resolves a JSON pointer (/items/0/sku) in a decoded document, or
// returns nil.
func pointer(doc any, ptr string) any {
	for _, tok := range pointerTokens(ptr) {
		switch node := doc.(type) {
		case map[string]any:
			doc = node[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(node) {
				return nil
			}
			doc = node[i]
		default:
			return nil
		}
	}
	return doc
}

func pointerTokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	toks := strings.Split(ptr, "/")[1:]
	for i, tok := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
	}
	return toks
}

// fieldPath turns a JSON pointer (/items/0/sku) into the path a Go or JS
// developer reads under root (input.items[0].sku).
func fieldPath(root, ptr string) string {
	var b strings.Builder
	b.WriteString(root)
	for _, tok := range pointerTokens(ptr) {
		b.WriteString(pathStep(tok))
	}
	return b.String()
}

func pathStep(tok string) string {
	if tok != "" && strings.Trim(tok, "0123456789") == "" {
		return "[" + tok + "]"
	}
	return "." + tok
}
