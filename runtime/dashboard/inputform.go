package dashboard

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/schema/spec"
)

// An inputField is one field of the form that triggers a run, made from
// the workflow's input JSON Schema: a property of a simple type gets a
// field of its own, an object with properties a fieldset of them, and
// anything else (arrays, unions, references) a JSON text area.
type inputField struct {
	// Name is the form's name of the field: "input" and the JSON Pointer
	// of the property ("input/customer/email").
	Name string
	// Path is the property's path as the API's errors name it
	// ("input.customer.email").
	Path  string
	Label string
	// Kind is string, number, integer, boolean, enum, object or json.
	Kind        string
	Required    bool
	Sensitive   bool
	Description string
	// Options are an enum's values, as JSON.
	Options []string
	// Fields are an object's properties, in the schema's order of
	// required first, then by name.
	Fields []inputField
	// Value is what the form holds (after a refused submission); Problems
	// what the API said of this field.
	Value    string
	Problems []string
}

// Bounds of the form made from a schema, whatever its size.
const (
	maxFormFields = 200
	maxFormDepth  = 6
)

// inputForm is the form of a workflow's input schema: its fields, or
// none when the schema is not an object with properties (the input is
// then typed as JSON).
type inputForm struct {
	Fields []inputField
	// JSON is the text of the "edit as JSON" area, which, when not
	// empty, is the input and the fields are ignored.
	JSON string
	// Problems are the API's problems that name no field of the form, and
	// the trigger's other errors.
	Problems []string
	// Refused is set when a submission was refused: the form says so
	// above its fields.
	Refused bool
	Tenant  string
	Key     string
	// Tags is the tags area's text: a key=value a line.
	Tags string
	// StartAfter and Timeout are the optional delay of the run's start
	// (WithStartAfter) and its deadline (WithTimeout), as typed: Go
	// durations such as 30m.
	StartAfter, Timeout string
}

// newInputForm reads an input schema (JSON text) into form fields.
func newInputForm(schemaText string) inputForm {
	var root map[string]any
	dec := json.NewDecoder(strings.NewReader(schemaText))
	dec.UseNumber()
	if strings.TrimSpace(schemaText) == "" || dec.Decode(&root) != nil {
		return inputForm{}
	}
	n := 0
	f := objectFields(root, "input", "input", 0, &n)
	return inputForm{Fields: f}
}

// objectFields are the fields of an object schema's properties; nil when
// it has none or the form is full.
func objectFields(s map[string]any, name, path string, depth int, n *int) []inputField {
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 || depth >= maxFormDepth {
		return nil
	}
	required := map[string]bool{}
	if list, ok := s["required"].([]any); ok {
		for _, r := range list {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for p := range props {
		names = append(names, p)
	}
	slices.SortFunc(names, func(a, b string) int {
		if required[a] != required[b] {
			if required[a] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var out []inputField
	for _, p := range names {
		if *n >= maxFormFields {
			break
		}
		*n++
		ps, _ := props[p].(map[string]any)
		f := inputField{Name: name + "/" + pointerEscape(p), Path: path + "." + p, Label: p, Required: required[p], Kind: "json"}
		f.Description, _ = ps["description"].(string)
		f.Sensitive, _ = ps[spec.SensitiveKeyword].(bool)
		f.Kind = kindOf(ps)
		switch f.Kind {
		case "enum":
			for _, v := range ps["enum"].([]any) {
				b, _ := json.Marshal(v)
				f.Options = append(f.Options, string(b))
			}
		case "object":
			if f.Fields = objectFields(ps, f.Name, f.Path, depth+1, n); f.Fields == nil {
				f.Kind = "json"
			}
		}
		out = append(out, f)
	}
	return out
}

// kindOf is the kind of field a property's schema gets.
func kindOf(s map[string]any) string {
	if s == nil {
		return "json"
	}
	for _, k := range []string{"$ref", "oneOf", "anyOf", "allOf", "not", "if", "const"} {
		if _, ok := s[k]; ok {
			return "json"
		}
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 && len(e) <= 100 {
		return "enum"
	}
	switch t, _ := s["type"].(string); t {
	case "string", "number", "integer", "boolean":
		return t
	case "object":
		return "object"
	}
	return "json"
}

// pointerEscape escapes a property name for a JSON Pointer.
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// read fills the form's values from a submitted form and builds the run
// input from them: the JSON area's text when it is not empty, else an
// object of the fields that hold a value. Values are put in as their
// fields' types ask when they read as such (a number field's "12" is the
// number 12), and as strings otherwise, so that the API's validation says
// what is wrong with them. A JSON area that is not JSON is a problem of
// its field.
func (f *inputForm) read(form url.Values) (json.RawMessage, bool) {
	f.JSON = form.Get("input-json")
	f.Tenant = strings.TrimSpace(form.Get("tenant"))
	f.Key = form.Get("idempotency-key")
	f.Tags = form.Get("tags")
	f.StartAfter = strings.TrimSpace(form.Get("start-after"))
	f.Timeout = strings.TrimSpace(form.Get("timeout"))
	if strings.TrimSpace(f.JSON) != "" {
		return json.RawMessage(f.JSON), true
	}
	obj, ok := readFields(f.Fields, form)
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, false
	}
	return b, ok
}

// readFields reads fields into an object; ok is false when a JSON area
// holds something that is not JSON.
func readFields(fields []inputField, form url.Values) (map[string]any, bool) {
	obj := map[string]any{}
	ok := true
	for i := range fields {
		f := &fields[i]
		if f.Kind == "object" {
			sub, subOK := readFields(f.Fields, form)
			ok = ok && subOK
			if len(sub) > 0 || f.Required {
				obj[f.Label] = sub
			}
			continue
		}
		f.Value = form.Get(f.Name)
		if f.Value == "" {
			continue // absent: the API says whether it is required
		}
		switch f.Kind {
		case "string":
			obj[f.Label] = f.Value
		case "number", "integer", "boolean", "enum", "json":
			var v json.RawMessage
			if json.Valid([]byte(f.Value)) {
				v = json.RawMessage(strings.TrimSpace(f.Value))
			}
			switch {
			case v != nil:
				obj[f.Label] = v
			case f.Kind == "json":
				f.Problems = append(f.Problems, "not valid JSON")
				ok = false
			default:
				obj[f.Label] = f.Value // the API says it is not a number
			}
		}
	}
	return obj, ok
}

// place puts each of the API's problems next to the field it names (or
// the closest enclosing one), and those that name none on the form.
func (f *inputForm) place(field, message string) {
	if !placeIn(f.Fields, field, message) {
		if field != "" {
			message = field + ": " + message
		}
		f.Problems = append(f.Problems, message)
	}
}

func placeIn(fields []inputField, field, message string) bool {
	for i := range fields {
		fl := &fields[i]
		if field != fl.Path && !strings.HasPrefix(field, fl.Path+".") && !strings.HasPrefix(field, fl.Path+"[") {
			continue
		}
		if fl.Kind == "object" && placeIn(fl.Fields, field, message) {
			return true
		}
		if field != fl.Path {
			message = strings.TrimPrefix(field, fl.Path) + ": " + message
		}
		fl.Problems = append(fl.Problems, message)
		return true
	}
	return false
}

// runOptions are the trigger options of the form's delay and timeout,
// or the problems of those that are not positive Go durations.
func (f *inputForm) runOptions() ([]runtime.RunOption, []string) {
	var opts []runtime.RunOption
	var problems []string
	for _, field := range []struct {
		label, value string
		option       func(time.Duration) runtime.RunOption
	}{
		{"start after", f.StartAfter, runtime.WithStartAfter},
		{"timeout", f.Timeout, runtime.WithTimeout},
	} {
		if field.value == "" {
			continue
		}
		d, err := time.ParseDuration(field.value)
		if err != nil || d <= 0 {
			problems = append(problems, fmt.Sprintf("%s: %q is not a positive duration; write a number and a unit such as 30s, 5m or 24h", field.label, truncate(field.value, 40)))
			continue
		}
		opts = append(opts, field.option(d))
	}
	return opts, problems
}
