package runtime_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
)

// paymentInput marks a card number, a whole nested object, the items of a
// list, and a $defs entry properties refer to.
const paymentInput = `{
	"type": "object",
	"properties": {
		"email": {"type": "string", "format": "email"},
		"cardNumber": {"type": "string", "pattern": "^[0-9]{12,19}$", "x-trellis-sensitive": true},
		"holder": {"type": "object", "x-trellis-sensitive": true, "properties": {"name": {"type": "string"}}},
		"pins": {"type": "array", "items": {"type": "string", "x-trellis-sensitive": true}},
		"billing": {"$ref": "#/$defs/address"},
		"amount": {"type": "integer", "minimum": 1},
		"contact": {"type": "object", "properties": {"phone": {"type": "string", "format": "email", "x-trellis-sensitive": true}}}
	},
	"$defs": {"address": {"type": "object", "properties": {"street": {"type": "string", "x-trellis-sensitive": true}, "country": {"type": "string"}}}}
}`

func paymentDef(t *testing.T) *runtime.Definition {
	t.Helper()
	def, err := runtime.Compile(&runtime.WorkflowSpec{
		Name: "pay", InputSchema: paymentInput,
		Steps: []runtime.StepSpec{
			{Name: "charge", OutputSchema: `{"type":"object","properties":{"receipt":{"type":"object","properties":{"token":{"type":"string","x-trellis-sensitive":true},"id":{"type":"string"}}}}}`},
			{Name: "each", Parents: []string{"charge"}, ForEach: &runtime.ForEachSpec{Items: "input.pins", ItemSchema: `{"type":"string"}`},
				OutputSchema: `{"type":"object","properties":{"secret":{"type":"string","x-trellis-sensitive":true},"n":{"type":"integer"}}}`},
			{Name: "plain", OutputSchema: `{"type":"object"}`},
		},
		OnFailure: &runtime.OnFailureSpec{Name: "alert"},
		Events:    []runtime.EventSpec{{Name: "approved", Schema: `{"type":"object","properties":{"otp":{"type":"string","x-trellis-sensitive":true},"by":{"type":"string"}}}`}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return def
}

func TestRedact(t *testing.T) {
	def := paymentDef(t)
	tests := []struct {
		name     string
		redact   func(json.RawMessage) json.RawMessage
		in, want string
	}{
		{"input", def.RedactInput,
			`{"email":"a@b.example","cardNumber":"4111111111111111","holder":{"name":"Ann Lee"},"pins":["1234","9876"],"billing":{"street":"1 Main St","country":"NZ"},"amount":5,"contact":{"phone":"x"}}`,
			`{"email":"a@b.example","cardNumber":"[redacted]","holder":"[redacted]","pins":["[redacted]","[redacted]"],"billing":{"street":"[redacted]","country":"NZ"},"amount":5,"contact":{"phone":"[redacted]"}}`},
		{"wrong types are redacted too", def.RedactInput,
			`{"cardNumber":{"deep":["4111111111111111"]},"holder":"Ann","pins":{"a":"1234"},"billing":[1]}`,
			`{"cardNumber":"[redacted]","holder":"[redacted]","pins":{"a":"1234"},"billing":[1]}`},
		{"order and unknown fields kept", def.RedactInput,
			`{"zeta":{"cardNumber":"x"},"cardNumber":123,"alpha":"<&>"}`,
			`{"zeta":{"cardNumber":"x"},"cardNumber":"[redacted]","alpha":"<&>"}`},
		{"not an object", def.RedactInput, `[1,2]`, `[1,2]`},
		{"not JSON", def.RedactInput, `{"cardNumber":"4111`, `"[redacted]"`},
		{"trailing data", def.RedactInput, `{"a":1} {"cardNumber":"4111"}`, `"[redacted]"`},
		{"output", func(o json.RawMessage) json.RawMessage { return def.RedactOutput(0, o) },
			`{"receipt":{"token":"tok_123","id":"r1"}}`, `{"receipt":{"token":"[redacted]","id":"r1"}}`},
		{"map output", func(o json.RawMessage) json.RawMessage { return def.RedactOutput(1, o) },
			`[{"secret":"s1","n":1},{"secret":"s2","n":2}]`, `[{"secret":"[redacted]","n":1},{"secret":"[redacted]","n":2}]`},
		{"unmarked output", func(o json.RawMessage) json.RawMessage { return def.RedactOutput(2, o) },
			`{"secret":"s"}`, `{"secret":"s"}`},
		{"failure handler", func(o json.RawMessage) json.RawMessage { return def.RedactOutput(3, o) }, `{"x":1}`, `{"x":1}`},
		{"event", func(p json.RawMessage) json.RawMessage { return def.RedactEvent("approved", p) },
			`{"otp":"000111","by":"ops"}`, `{"otp":"[redacted]","by":"ops"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.redact(json.RawMessage(tt.in))); got != tt.want {
				t.Errorf("redacted\n%s\ngot  %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
	if !def.HasSensitive() {
		t.Error("HasSensitive = false")
	}
}

func TestRedactHostileDocuments(t *testing.T) {
	def := paymentDef(t)
	// Deep nesting where the schema says nothing is copied as it is.
	deep := `{"billing":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`
	if got := string(def.RedactInput(json.RawMessage(deep))); got != deep {
		t.Errorf("deep document: %.80s", got)
	}
	// A recursive schema walked by a deep document is cut at the bound.
	rec, err := runtime.Compile(&runtime.WorkflowSpec{Name: "rec", Steps: []runtime.StepSpec{{Name: "a"}},
		InputSchema: `{"type":"object","$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"},"pin":{"type":"string","x-trellis-sensitive":true}}}},"properties":{"root":{"$ref":"#/$defs/node"}}}`})
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"root":` + strings.Repeat(`{"next":`, 10000) + `{"pin":"1234"}` + strings.Repeat(`}`, 10000) + `}`
	got := string(rec.RedactInput(json.RawMessage(doc)))
	if strings.Contains(got, "1234") {
		t.Errorf("a pin deep down survived: ...%s", got[len(got)-60:])
	}
	if !strings.HasPrefix(got, `{"root":{"next":{"next":`) {
		t.Errorf("structure above the bound is lost: %.60s", got)
	}
}

func TestRedactUnmarkedIsUnchanged(t *testing.T) {
	def, err := runtime.Compile(&runtime.WorkflowSpec{Name: "plain", InputSchema: `{"type":"object","properties":{"a":{"type":"string"}}}`, Steps: []runtime.StepSpec{{Name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	in := `{ "a" : "x",  "b": [1, 2] }`
	if got := string(def.RedactInput(json.RawMessage(in))); got != in {
		t.Errorf("RedactInput = %s, want it unchanged", got)
	}
	if def.HasSensitive() {
		t.Error("HasSensitive = true")
	}
}

func TestSensitiveKeywordMustBeBoolean(t *testing.T) {
	_, err := runtime.Compile(&runtime.WorkflowSpec{Name: "w", Steps: []runtime.StepSpec{{Name: "a"}},
		InputSchema: `{"type":"object","properties":{"a":{"type":"string","x-trellis-sensitive":"yes"}}}`})
	if err == nil {
		t.Fatal("Compile accepted x-trellis-sensitive: \"yes\"")
	}
}

func TestValidationErrorsHideSensitiveValues(t *testing.T) {
	def := paymentDef(t)
	long := strings.Repeat("z", 200) + "@"
	err := def.ValidateInput(json.RawMessage(`{"cardNumber":"4111-1111-1111-1111","email":"` + long + `","amount":-7,"contact":{"phone":"555-0100"},"billing":{"street":7}}`))
	var ie *runtime.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("ValidateInput = %v, want an InputError", err)
	}
	msg := err.Error()
	for _, secret := range []string{"4111", "555-0100"} {
		if strings.Contains(msg, secret) {
			t.Errorf("the error quotes the sensitive value %q: %s", secret, msg)
		}
	}
	for _, want := range []string{
		`input.cardNumber: does not match pattern`,
		`input.contact.phone: is not a valid "email"`,
		`input.email: "` + strings.Repeat("z", 32) + `…" is not a valid "email"`,
		`input.amount: must be >= 1 but found -7`,
		`input.billing.street: expected string, but got number`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, strings.Repeat("z", 33)) {
		t.Errorf("the error quotes more than 32 bytes of a value: %s", msg)
	}
}
