package condition

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// TestFilterTags: a filter reads a run's tags, a tag the run does not
// have reading as "", and `in` telling whether it has it.
func TestFilterTags(t *testing.T) {
	env := filterEnv(t)
	tagged := RunFacts{Input: json.RawMessage(`{"orderId":"A-1"}`), Status: "RUNNING", Tags: map[string]string{"customer": "acme", "sales-region": "eu"}}
	bare := RunFacts{Input: json.RawMessage(`{"orderId":"A-2"}`), Status: "RUNNING"}
	for _, tc := range []struct {
		expr        string
		tagged, bar bool
	}{
		{`tags.customer == "acme"`, true, false},
		{`tags["customer"] == "acme"`, true, false},
		{`tags["sales-region"] == "eu"`, true, false},
		{`tags.customer != "acme"`, false, true},
		{`tags.customer == ""`, false, true},
		{`"customer" in tags`, true, false},
		{`!("customer" in tags)`, false, true},
		{`size(tags) == 2`, true, false},
		{`tags.customer.startsWith("ac") || tags.customer == ""`, true, true},
	} {
		f, iss := env.Compile(tc.expr)
		if iss != nil {
			t.Fatalf("Compile(%q): %v", tc.expr, iss)
		}
		for _, c := range []struct {
			run  RunFacts
			want bool
		}{{tagged, tc.tagged}, {bare, tc.bar}} {
			got, _, err := f.Match(t.Context(), c.run)
			if err != nil || got != c.want {
				t.Errorf("%s on tags %v = %v, %v; want %v", tc.expr, c.run.Tags, got, err, c.want)
			}
		}
	}
	if _, iss := env.Compile(`tags.customer == 1`); iss == nil {
		t.Error(`tags.customer == 1 compiled: a tag is a string`)
	}
}

// TestFilterTagsPushdown: equalities of tags to non-empty strings, in the
// top-level conjuncts, are what a store can check through its index.
func TestFilterTagsPushdown(t *testing.T) {
	env := filterEnv(t)
	for expr, want := range map[string]map[string]string{
		`tags.customer == "acme"`:                             {"customer": "acme"},
		`"acme" == tags["customer"] && tags.channel == "web"`: {"customer": "acme", "channel": "web"},
		`tags.customer == "acme" || tags.customer == "x"`:     nil,
		`tags.customer == ""`:                                 nil,
		`tags.customer != "acme"`:                             nil,
		`tags.customer in ["acme"]`:                           {"customer": "acme"},
		`tags.customer in ["acme", "globex"]`:                 nil,
		`"customer" in tags`:                                  nil,
	} {
		f, iss := env.Compile(expr)
		if iss != nil {
			t.Fatalf("Compile(%q): %v", expr, iss)
		}
		if got := f.Pushdown(); !maps.Equal(got.Tags, want) || got.Empty {
			t.Errorf("Pushdown(%s).Tags = %v (empty %v), want %v", expr, got.Tags, got.Empty, want)
		}
	}
	f, _ := env.Compile(`tags.customer == "acme" && tags.customer == "globex"`)
	if !f.Pushdown().Empty {
		t.Error("two values of one tag: the pushdown is not empty")
	}
}

// TestFilterTagsDidYouMean: a misspelt tags gets its guess.
func TestFilterTagsDidYouMean(t *testing.T) {
	_, iss := filterEnv(t).Compile(`tgas.customer == "acme"`)
	if len(iss) == 0 || !strings.Contains(iss[0].String(), `did you mean "tags"?`) {
		t.Errorf("Compile(tgas...) = %v, want a guess of tags", iss)
	}
}
