package condition

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValueExprAssignable(t *testing.T) {
	input := json.RawMessage(`{"type":"object","required":["id","address"],"properties":{
		"id":{"type":"string"},"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},
		"address":{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"zip":{"type":"string"}}}}}`)
	env, err := NewEnv(input, map[string]json.RawMessage{"charge": json.RawMessage(`{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"}}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		expr, target, wantErr string
	}{
		{"input.id", `{"type":"string"}`, ""},
		{"input.n", `{"type":"number"}`, ""},
		{"input.n", `{"type":"string"}`, "has type int where a string goes"},
		{"input.tags", `{"type":"array","items":{"type":"string"}}`, ""},
		{"parents.charge.map(c, c.id)", `{"type":"array","items":{"type":"string"}}`, ""},
		{"parents.charge.map(c, c.id)", `{"type":"array","items":{"type":"integer"}}`, "an item: it has type string where an int goes"},
		{"input.address", `{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"zip":{"type":"string"}}}`, ""},
		{"input.address", `{"type":"object","properties":{"city":{"type":"integer"}}}`, "field city: it has type string where an int goes"},
		{"input.address", `{"type":"object","required":["country"],"properties":{"city":{"type":"string"},"country":{"type":"string"}}}`, "no field country"},
		{"input.address", `{"type":"object","additionalProperties":false,"properties":{"city":{"type":"string"}}}`, "field zip is not in the target"},
		{"input.id + '-x'", `{"type":"string"}`, ""},
		{"{'city': input.id, 'n': input.n}", `{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}}}`, ""},
		{"{'city': input.id, 'zip': input.id}", `{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}}}`, "map whose values may be field n, and it has type string where an int goes"},
		{"{'city': input.id}", `{"type":"string"}`, "where a string goes"},
	}
	for _, c := range cases {
		x, iss := env.CompileValue(c.expr)
		if len(iss) > 0 {
			t.Fatalf("%s: %v", c.expr, iss)
		}
		err := x.Assignable(json.RawMessage(c.target))
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s into %s: %v", c.expr, c.target, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s into %s: got %v, want %q", c.expr, c.target, err, c.wantErr)
		}
	}
	x, _ := env.CompileValue("{'city': input.address.city, 'n': input.n + 1}")
	vars, err := env.Bind(json.RawMessage(`{"id":"a","n":2,"address":{"city":"Ghent"}}`), map[string]json.RawMessage{"charge": json.RawMessage(`[]`)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := x.Eval(t.Context(), vars)
	if err != nil || string(got) != `{"city":"Ghent","n":3}` {
		t.Errorf("Eval = %s, %v", got, err)
	}
}
