package condition

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

const inputSchema = `{
  "type": "object",
  "required": ["orderId", "amountCents"],
  "properties": {
    "orderId": {"type": "string"},
    "amountCents": {"type": "integer"},
    "express": {"type": "boolean"},
    "placedAt": {"type": "string", "format": "date-time"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "limits": {"type": "object", "additionalProperties": {"type": "number"}},
    "address": {"$ref": "#/$defs/address"}
  },
  "$defs": {
    "address": {"type": "object", "properties": {"country": {"type": "string"}, "next": {"$ref": "#/$defs/address"}}}
  }
}`

func orderEnv(t *testing.T) *Env {
	t.Helper()
	env, err := NewEnv(json.RawMessage(inputSchema), map[string]json.RawMessage{
		"validate":     json.RawMessage(`{"type":"object","required":["isValid"],"properties":{"isValid":{"type":"boolean"},"score":{"type":"number"}}}`),
		"notify":       nil,
		"fraud-window": json.RawMessage(`{"type":"object","properties":{"cleared":{"type":"boolean"}}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestCompileReportsProblems(t *testing.T) {
	env := orderEnv(t)
	tests := []struct {
		expr string
		want string // substring of the first issue
		col  int
	}{
		{"input.orderid == 'x'", "undefined field 'orderid'", 6},
		{"parents.charge.ok", `"charge" is not a parent of this step (parents: fraud-window, notify, validate)`, 8},
		{"parents.`fraud-windw`.cleared", `"fraud-windw" is not a parent of this step`, 8},
		{"input.amountCents", "must be a boolean expression", 1},
		{"input.amountCents > 'x'", "no matching overload", 19},
		{"!parents.validate.isValid &&", "Syntax error", 29},
		{"unknown > 1", "undeclared reference to 'unknown'", 1},
		{"input.address.nxt.country == 'NL'", "undefined field 'nxt'", 14},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			prg, iss := env.Compile(tt.expr)
			if prg != nil || len(iss) == 0 {
				t.Fatalf("Compile(%q) succeeded, want an issue containing %q", tt.expr, tt.want)
			}
			if !strings.Contains(iss[0].Message, tt.want) {
				t.Fatalf("issue = %q, want it to contain %q", iss[0].Message, tt.want)
			}
			if iss[0].Line != 1 || iss[0].Column != tt.col {
				t.Errorf("issue at %d:%d, want 1:%d", iss[0].Line, iss[0].Column, tt.col)
			}
		})
	}
}

func TestEval(t *testing.T) {
	env := orderEnv(t)
	input := json.RawMessage(`{"orderId":"o-1","amountCents":1500,"placedAt":"2026-01-02T03:04:05Z",
		"tags":["vip"],"limits":{"daily":2.5},"address":{"country":"NL","next":{"country":"BE"}}}`)
	outputs := map[string]json.RawMessage{
		"validate":     json.RawMessage(`{"isValid":false}`),
		"fraud-window": json.RawMessage(`{"cleared":true}`),
	}
	tests := []struct {
		expr string
		want bool
	}{
		{"!parents.validate.isValid", true},
		{"parents.validate.isValid", false},
		{"input.amountCents > 1000 && input.amountCents + 1 == 1501", true},
		{"input.express", false},                // absent optional field reads as zero
		{"has(input.express)", false},           // ... and has() tells it was absent
		{"has(input.orderId)", true},            // present field
		{"has(parents.notify)", false},          // skipped parent
		{"has(parents.validate)", true},         // completed parent
		{"parents.validate.score == 0.0", true}, // absent number
		{"input.placedAt < timestamp('2027-01-01T00:00:00Z')", true},
		{"'vip' in input.tags", true},
		{"input.limits['daily'] > 2.0", true},
		{"input.address.next.country == 'BE'", true},
		{"input.address.next.next.country == ''", true},
		{"parents.`fraud-window`.cleared", true},
		{"has(parents.`fraud-window`)", true},
	}
	vars, err := env.Bind(input, outputs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			prg, iss := env.Compile(tt.expr)
			if len(iss) > 0 {
				t.Fatalf("Compile: %v", iss)
			}
			got, err := prg.Eval(context.Background(), vars)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Eval = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEvalErrorIsReported(t *testing.T) {
	env := orderEnv(t)
	prg, iss := env.Compile("input.amountCents / 0 > 1")
	if len(iss) > 0 {
		t.Fatal(iss)
	}
	vars, err := env.Bind(json.RawMessage(`{"orderId":"o","amountCents":1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prg.Eval(context.Background(), vars); err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("Eval error = %v, want division by zero", err)
	}
}

func TestBindRejectsMistypedValues(t *testing.T) {
	env := orderEnv(t)
	_, err := env.Bind(json.RawMessage(`{"orderId":"o","amountCents":"12"}`), nil)
	if err == nil || !strings.Contains(err.Error(), "input.amountCents: want an integer, got a string") {
		t.Fatalf("Bind error = %v", err)
	}
}

func TestNewEnvRejectsDanglingRef(t *testing.T) {
	_, err := NewEnv(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`), nil)
	if err == nil || !strings.Contains(err.Error(), `"#/$defs/missing"`) {
		t.Fatalf("NewEnv error = %v", err)
	}
}

func TestParseChecksSyntaxOnly(t *testing.T) {
	if iss := Parse("parents.`fraud-window`.cleared && input.whatever"); len(iss) != 0 {
		t.Errorf("Parse of a well-formed condition = %v", iss)
	}
	iss := Parse("input.a &&")
	if len(iss) != 1 || iss[0].Column != 11 || !strings.Contains(iss[0].Message, "Syntax error") {
		t.Errorf("Parse of a broken condition = %v", iss)
	}
}
