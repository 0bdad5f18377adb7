package condition

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func filterEnv(t *testing.T) *FilterEnv {
	t.Helper()
	env, err := NewFilterEnv(json.RawMessage(inputSchema))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestFilterCompileReportsProblems(t *testing.T) {
	env := filterEnv(t)
	for expr, want := range map[string]string{
		"input.amountCent > 100":       "1:6: undefined field 'amountCent'",
		"input.amountCents > \"100\"":  "no matching overload",
		"input.orderId":                "a filter must be a boolean expression",
		"status == FAILED":             "undeclared reference to 'FAILED'",
		"parents.validate.isValid":     "undeclared reference to 'parents'",
		"created > \"2026-01-01\"":     "no matching overload",
		"input.address.country == 'x'": "",
	} {
		_, iss := env.Compile(expr)
		got := ""
		for _, i := range iss {
			got += i.String() + "\n"
		}
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("Compile(%q) = %q, want %q", expr, got, want)
		}
	}
}

func TestFilterMatch(t *testing.T) {
	env := filterEnv(t)
	created := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	run := RunFacts{
		Input:   json.RawMessage(`{"orderId":"A-1","amountCents":2500,"address":{"country":"NL"},"tags":["gift"]}`),
		Status:  "FAILED",
		Tenant:  "acme",
		Created: created,
	}
	for expr, want := range map[string]bool{
		`input.amountCents > 1000 && status == "FAILED"`:                  true,
		`input.amountCents > 1000 && status == "COMPLETED"`:               false,
		`input.address.country in ["NL", "BE"]`:                           true,
		`input.express`:                                                   false, // absent: its zero value
		`!input.express && "gift" in input.tags`:                          true,
		`tenant == "acme" && created < timestamp("2026-11-02T00:00:00Z")`: true,
		`created > timestamp("2026-11-02T00:00:00Z")`:                     false,
		`input.address.next.country == ""`:                                true,
	} {
		f, iss := env.Compile(expr)
		if iss != nil {
			t.Fatalf("Compile(%q): %v", expr, iss)
		}
		got, _, err := f.Match(context.Background(), run)
		if err != nil {
			t.Fatalf("Match(%q): %v", expr, err)
		}
		if got != want {
			t.Errorf("Match(%q) = %v, want %v", expr, got, want)
		}
	}
	f, _ := env.Compile(`input.amountCents / 0 > 1`)
	if _, _, err := f.Match(context.Background(), run); err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("Match of a division by zero: %v, want the error", err)
	}
	f, _ = env.Compile(`input.amountCents > 1`)
	if _, _, err := f.Match(context.Background(), RunFacts{Input: json.RawMessage(`{"amountCents":"lots"}`)}); err == nil ||
		!strings.Contains(err.Error(), "input.amountCents") {
		t.Errorf("Match of an input that does not fit the schema: %v, want an error naming the field", err)
	}
}

func TestFilterPushdown(t *testing.T) {
	env := filterEnv(t)
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	for _, tc := range []struct {
		expr string
		want Pushdown
	}{
		{`input.amountCents > 5`, Pushdown{}},
		{`status == "FAILED" && input.orderId == "A-1"`,
			Pushdown{Statuses: []string{"FAILED"}, InputContains: docs(`{"orderId":"A-1"}`)}},
		{`status in ["FAILED", "CANCELLED"] && status != "X" && status == "CANCELLED"`,
			Pushdown{Statuses: []string{"CANCELLED"}}},
		{`status == "FAILED" && status == "CANCELLED"`, Pushdown{Empty: true, Statuses: []string{}}},
		{`input.address.country in ["NL", "BE"] && input.express == true && input.amountCents == 7`,
			Pushdown{InputContains: docs(
				`{"address":{"country":"NL"},"amountCents":7,"express":true}`,
				`{"address":{"country":"BE"},"amountCents":7,"express":true}`)}},
		// Zero values match absent fields: not pushed down.
		{`input.orderId == "" && input.express == false && input.amountCents == 0`, Pushdown{}},
		// Only conjuncts: a disjunction is left to the filter.
		{`input.orderId == "A" || status == "FAILED"`, Pushdown{}},
		{`input.orderId == "A" && input.orderId == "B"`, Pushdown{Empty: true}},
		{`tenant == "acme" && created >= timestamp("2026-01-01T00:00:00Z") && timestamp("2026-02-01T00:00:00Z") > created`,
			Pushdown{Tenant: "acme", CreatedFrom: at("2026-01-01T00:00:00Z"), CreatedTo: at("2026-02-01T00:00:00Z")}},
		{`created <= timestamp("2026-01-01T00:00:00Z")`, Pushdown{CreatedTo: at("2026-01-01T00:00:00Z").Add(time.Nanosecond)}},
		{`created > timestamp("2026-03-01T00:00:00Z") && created < timestamp("2026-01-01T00:00:00Z")`,
			Pushdown{Empty: true, CreatedFrom: at("2026-03-01T00:00:00Z"), CreatedTo: at("2026-01-01T00:00:00Z")}},
		// A map's entries and list elements are not pushed down.
		{`input.limits["x"] == 1.5 && "gift" in input.tags`, Pushdown{}},
	} {
		f, iss := env.Compile(tc.expr)
		if iss != nil {
			t.Fatalf("Compile(%q): %v", tc.expr, iss)
		}
		got, _ := json.Marshal(f.Pushdown())
		want, _ := json.Marshal(tc.want)
		if string(got) != string(want) {
			t.Errorf("Pushdown(%q)\n got %s\nwant %s", tc.expr, got, want)
		}
	}
}

func docs(ss ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(ss))
	for i, s := range ss {
		out[i] = json.RawMessage(s)
	}
	return out
}

// Match reports what each evaluation cost, so that a listing can bound the
// total: more for a filter that does more.
func TestFilterMatchCost(t *testing.T) {
	env := filterEnv(t)
	run := RunFacts{Input: json.RawMessage(`{"amountCents":2500,"tags":["a","b","c","d","e","f","g","h"]}`)}
	cost := func(expr string) uint64 {
		f, iss := env.Compile(expr)
		if iss != nil {
			t.Fatalf("Compile(%q): %v", expr, iss)
		}
		_, c, err := f.Match(context.Background(), run)
		if err != nil {
			t.Fatalf("Match(%q): %v", expr, err)
		}
		return c
	}
	cheap := cost(`input.amountCents > 1000`)
	dear := cost(`input.tags.all(a, input.tags.all(b, a + b != "zz"))`)
	if cheap == 0 || dear <= 10*cheap {
		t.Errorf("costs: %d for a comparison, %d for a nested comprehension; want both positive, the second far more", cheap, dear)
	}
}

// TestFilterGuessesNames checks the "did you mean" of a misspelt field or
// variable, among the fields of the object it is read from.
func TestFilterGuessesNames(t *testing.T) {
	env := filterEnv(t)
	for expr, want := range map[string]string{
		"input.amountCent > 100":                                          `1:6: undefined field 'amountCent'; did you mean "amountCents"?`,
		"input.adress.country == 'NL'":                                    `1:6: undefined field 'adress'; did you mean "address"?`,
		"input.address.countyr == 'NL'":                                   `1:14: undefined field 'countyr'; did you mean "country"?`,
		"input.address.next.contry == 'NL'":                               `1:19: undefined field 'contry'; did you mean "country"?`,
		"[input.address].exists(a, a.contry == 'NL')":                     `undefined field 'contry'; did you mean "country"?`,
		`stauts == "FAILED"`:                                              `1:1: undeclared reference to 'stauts'; did you mean "status"?`,
		"input.zzz > 1":                                                   `1:6: undefined field 'zzz'` + "\n",
		"tenantt == 'acme' && creatd > timestamp('2030-01-01T00:00:00Z')": "1:1: undeclared reference to 'tenantt'; did you mean \"tenant\"?\n1:22: undeclared reference to 'creatd'; did you mean \"created\"?\n",
	} {
		_, iss := env.Compile(expr)
		got := ""
		for _, i := range iss {
			got += i.String() + "\n"
		}
		if !strings.Contains(got, want) {
			t.Errorf("Compile(%q) = %q, want %q", expr, got, want)
		}
	}
}
