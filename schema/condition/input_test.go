package condition

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestIntExpr(t *testing.T) {
	env, err := NewInputEnv(json.RawMessage(`{"type":"object","properties":{"tier":{"type":"string"},"n":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		expr     string
		input    string
		want     int64
		constant bool
	}{
		{"3", `{}`, 3, true},
		{"1 + 1", `{}`, 2, true},
		{"input.tier == 'gold' ? 3 : 2", `{"tier":"gold"}`, 3, false},
		{"input.tier == 'gold' ? 3 : 2", `{}`, 2, false},
		{"input.n", `{"n":7}`, 7, false},
	}
	for _, tt := range tests {
		x, issues := env.CompileInt(tt.expr)
		if len(issues) > 0 {
			t.Errorf("CompileInt(%q): %v", tt.expr, issues)
			continue
		}
		got, err := x.Eval(t.Context(), json.RawMessage(tt.input))
		if err != nil || got != tt.want {
			t.Errorf("%q on %s = %d, %v; want %d", tt.expr, tt.input, got, err, tt.want)
		}
		if c, ok := x.Constant(t.Context()); ok != tt.constant || (ok && c != tt.want) {
			t.Errorf("%q: Constant() = %d, %v; want constant %v", tt.expr, c, ok, tt.constant)
		}
	}

	for expr, want := range map[string]string{
		"input.tier":      "must be of type int",
		"2.5":             "must be of type int",
		"input.tierr + 1": "undefined field 'tierr'",
		"parents.x":       "undeclared reference to 'parents'",
	} {
		if _, issues := env.CompileInt(expr); len(issues) == 0 || !strings.Contains(issues[0].Message, want) {
			t.Errorf("CompileInt(%q) = %v, want an issue saying %q", expr, issues, want)
		}
	}

	x, _ := env.CompileInt("10 / input.n")
	if _, err := x.Eval(t.Context(), json.RawMessage(`{"n":0}`)); err == nil {
		t.Error("dividing by zero evaluated without error")
	}
}
