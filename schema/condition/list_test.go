package condition

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestListExpr(t *testing.T) {
	input := json.RawMessage(`{"type":"object","properties":{
		"items":{"type":"array","items":{"$ref":"#/$defs/item"}},
		"tags":{"type":"array","items":{"type":"string"}},
		"n":{"type":"integer"}},
		"$defs":{"item":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}}}}`)
	load := json.RawMessage(`{"type":"object","properties":{"rows":{"type":"array","items":{"type":"number"}}}}`)
	env, err := NewEnv(input, map[string]json.RawMessage{"load": load})
	if err != nil {
		t.Fatal(err)
	}
	vars, err := env.Bind(json.RawMessage(`{"items":[{"sku":"a","qty":2},{"sku":"b"}],"tags":["x","y"],"n":3}`),
		map[string]json.RawMessage{"load": json.RawMessage(`{"rows":[1.5,2]}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		expr, schema, items string
	}{
		{"input.items", `{"$defs":{"item":{"properties":{"qty":{"type":"integer"},"sku":{"type":"string"}},"required":["sku"],"type":"object"}},"properties":{"qty":{"type":"integer"},"sku":{"type":"string"}},"required":["sku"],"type":"object"}`, `{"qty":2,"sku":"a"} {"sku":"b"}`},
		{"input.items.filter(i, i.qty > 0)", "", `{"qty":2,"sku":"a"}`},
		{"input.tags", `{"type":"string"}`, `"x" "y"`},
		{"input.items.map(i, i.sku + '!')", `{"type":"string"}`, `"a!" "b!"`},
		{"parents.load.rows", `{"type":"number"}`, `1.5 2`},
		{"[]", "", ``},
	} {
		x, iss := env.CompileList(tt.expr)
		if tt.expr == "[]" {
			if len(iss) == 0 {
				t.Errorf("CompileList(%q) accepted a list of unknown items", tt.expr)
			}
			continue
		}
		if len(iss) > 0 {
			t.Errorf("CompileList(%q): %v", tt.expr, iss)
			continue
		}
		if tt.schema != "" && x.ItemSchema != tt.schema {
			t.Errorf("CompileList(%q).ItemSchema = %s, want %s", tt.expr, x.ItemSchema, tt.schema)
		}
		got, err := x.Eval(t.Context(), vars)
		if err != nil {
			t.Errorf("Eval(%q): %v", tt.expr, err)
			continue
		}
		var parts []string
		for _, raw := range got {
			parts = append(parts, string(raw))
		}
		if s := strings.Join(parts, " "); s != tt.items {
			t.Errorf("Eval(%q) = %s, want %s", tt.expr, s, tt.items)
		}
	}
	for _, bad := range []string{"input.n", "parents.nope.rows", "input.items +"} {
		if _, iss := env.CompileList(bad); len(iss) == 0 {
			t.Errorf("CompileList(%q) found no problem", bad)
		}
	}
}
