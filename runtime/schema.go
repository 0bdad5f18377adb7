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
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// schema is a compiled JSON Schema and the document it was compiled from,
// which names the properties a "required" keyword lists.
type schema struct {
	compiled *jsonschema.Schema
	doc      any
	// tainted are the schemas that are marked sensitive or lead to one
	// (see redact); nil when none is.
	tainted map[*jsonschema.Schema]bool
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
	if err := registerSensitive(c); err != nil {
		return nil, err
	}
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
	return &schema{compiled: compiled, doc: doc, tainted: taint(compiled)}, nil
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
	value := pointer(instance, ve.InstanceLocation)
	sensitive := s.sensitiveAt(instance, ve.InstanceLocation)
	// The path may be huge (its keys are the document's); the message
	// quotes at most a short part of a value that is not sensitive.
	*out = append(*out, FieldProblem{Field: elide(fieldPath(root, ve.InstanceLocation), maxProblemBytes),
		Message: elide(s.message(ve, value, sensitive), maxProblemBytes)})
}

// maxQuoted is how much of an offending value a problem quotes: enough to
// recognise it, not enough to copy a document into the error.
const maxQuoted = 32

// message says why a value failed one keyword of its schema: it names the
// rule, and quotes the value only when it is not sensitive, and then at
// most maxQuoted bytes of it. Problems are stored as step errors, returned
// to triggers and logged, so they must not carry what the schema hides.
func (s *schema) message(ve *jsonschema.ValidationError, value any, sensitive bool) string {
	keyword := ve.KeywordLocation[strings.LastIndex(ve.KeywordLocation, "/")+1:]
	_, fragment, _ := strings.Cut(ve.AbsoluteKeywordLocation, "#")
	rule := pointer(s.doc, fragment)
	quoted := ""
	if !sensitive {
		quoted = quoteShort(value) + " "
	}
	switch keyword {
	case "format":
		return fmt.Sprintf("%sis not a valid %q", quoted, fmt.Sprint(rule))
	case "multipleOf":
		return fmt.Sprintf("%sis not a multiple of %v", quoted, rule)
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		msg, _, _ := strings.Cut(ve.Message, " but found ")
		if sensitive {
			return msg
		}
		return msg + " but found " + strings.TrimSuffix(quoted, " ")
	case "minLength", "maxLength":
		if sensitive {
			msg, _, _ := strings.Cut(ve.Message, ", but got ")
			return msg
		}
	}
	return ve.Message
}

// quoteShort quotes a JSON value for an error: a string in Go syntax, a
// number as written, at most maxQuoted bytes of either, cut at a
// character and marked with … when cut.
func quoteShort(v any) string {
	var text string
	switch v := v.(type) {
	case string:
		text = v
	case json.Number:
		text = v.String()
	default:
		b, _ := json.Marshal(v)
		text = string(b)
	}
	cut := len(text) > maxQuoted
	if cut {
		n := maxQuoted
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		text = text[:n]
	}
	if _, isString := v.(string); isString || cut {
		q := strconv.Quote(text)
		if cut {
			q = q[:len(q)-1] + "…\""
		}
		return q
	}
	return text
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
