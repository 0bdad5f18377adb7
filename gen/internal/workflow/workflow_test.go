package workflow

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/schema/spec"
)

// update is accepted so that go test ./gen/... -update works; this
// package's tests have no goldens of their own.
var _ = flag.Bool("update", false, "no effect in this package")

func parse(t *testing.T, src string) (*Workflow, []Problem) {
	t.Helper()
	return newParser(t).Parse("test.yaml", []byte(src))
}

func mustParse(t *testing.T, src string) *Workflow {
	t.Helper()
	w, problems := parse(t, src)
	if len(problems) > 0 {
		t.Fatalf("unexpected problems:\n%v", problems)
	}
	return w
}

func TestEffectiveSettings(t *testing.T) {
	w := mustParse(t, `
name: settings
input: {type: object}
defaults:
  retry: {maxRetries: 2, initialDelay: 1s, backoffFactor: 2, maxDelay: 1m}
  timeout: 5m
steps:
  - name: inherits
  - name: overrides
    retry: {maxRetries: 5, maxDelay: 2m}
    timeout: 30s
  - name: nap
    sleep: 24h
onFailure:
  name: alert
  retry: {backoffFactor: 1.5}
`)
	policy := func(n int, initial time.Duration, factor float64, max time.Duration) spec.RetryPolicy {
		return spec.RetryPolicy{MaxRetries: n, InitialDelay: initial, BackoffFactor: factor, MaxDelay: max}
	}
	type settings struct {
		Retry   spec.RetryPolicy
		Timeout time.Duration
		Sleep   time.Duration
	}
	got := map[string]settings{}
	for _, s := range w.Steps {
		got[s.Name] = settings{s.Retry, s.Timeout, s.Sleep}
	}
	got["alert"] = settings{Retry: w.OnFailure.Retry, Timeout: w.OnFailure.Timeout}
	want := map[string]settings{
		"inherits":  {Retry: policy(2, time.Second, 2, time.Minute), Timeout: 5 * time.Minute},
		"overrides": {Retry: policy(5, time.Second, 2, 2*time.Minute), Timeout: 30 * time.Second},
		"nap":       {Sleep: 24 * time.Hour},
		"alert":     {Retry: policy(2, time.Second, 1.5, time.Minute), Timeout: 5 * time.Minute},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("effective settings (-want +got):\n%s", diff)
	}
}

func TestDefaultRetryWithoutDefaults(t *testing.T) {
	w := mustParse(t, "name: plain\ninput: {type: object}\nsteps:\n  - name: a\n    retry: {maxRetries: 3}\n")
	want := runtime.DefaultRetryPolicy()
	want.MaxRetries = 3
	if got := w.Steps[0].Retry; got != want {
		t.Errorf("retry = %+v, want the built-in policy with 3 retries %+v", got, want)
	}
}

func TestMaySkip(t *testing.T) {
	w := mustParse(t, `
name: skips
input: {type: object, properties: {x: {type: boolean}}}
steps:
  - name: root
  - name: maybe
    parents: [root]
    skipIf: ["input.x"]
  - name: after-maybe
    parents: [maybe]
  - name: merge
    parents: [root, maybe]
  - name: nap
    parents: [maybe]
    sleep: 1h
  - name: after-nap
    parents: [nap, after-maybe]
`)
	want := map[string]bool{
		"root": false, "maybe": true, "after-maybe": true, "merge": false, "nap": true, "after-nap": true,
	}
	for _, s := range w.Steps {
		if s.MaySkip != want[s.Name] {
			t.Errorf("step %s: MaySkip = %v, want %v", s.Name, s.MaySkip, want[s.Name])
		}
	}
}

// TestConditionPositions checks that a problem inside a condition points
// at the offending character of the file, however the string is written.
func TestConditionPositions(t *testing.T) {
	head := "name: pos\ninput: {type: object, properties: {name: {type: string}}}\nsteps:\n  - name: a\n    skipIf:\n"
	tests := []struct {
		name  string
		entry string // appended after head
		want  string // line:col of the misspelt field's '.'
	}{
		{"plain", "      - input.nme == 'x'\n", "6:14"},
		{"double quoted", "      - \"input.nme == 'x'\"\n", "6:15"},
		{"double quoted with escapes", "      - \"'\\u00e9' == input.nme\"\n", "6:27"},
		{"single quoted with doubled quotes", "      - '''x'' == input.nme'\n", "6:24"},
		{"literal block, second line", "      - |\n        input.name == 'x' ||\n          input.nme == 'y'\n", "8:16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := parse(t, head+tt.entry)
			if len(problems) != 1 || !strings.Contains(problems[0].Message, "undefined field 'nme'") {
				t.Fatalf("problems = %v, want one undefined field 'nme'", problems)
			}
			if got := problems[0].Pos().String(); got != tt.want {
				t.Errorf("position = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSortedDropsSchemaDuplicates(t *testing.T) {
	ps := NewProblems("f.yaml")
	ps.addFromSchema(Pos{3, 5}, "type", "steps: expected array, but got object")
	ps.Add(Pos{3, 5}, "type", "steps must be a list")
	ps.addFromSchema(Pos{3, 5}, "pattern", "kept: another rule")
	ps.Add(Pos{1, 1}, "", "first")
	ps.Add(Pos{1, 1}, "", "first")
	var got []string
	for _, p := range ps.List() {
		got = append(got, p.String())
	}
	want := []string{"f.yaml:1:1: first", "f.yaml:3:5: kept: another rule", "f.yaml:3:5: steps must be a list"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

func TestSuggestName(t *testing.T) {
	tests := map[string]string{
		"OrderProcessing": "order-processing", "charge_card": "charge-card", "Notify Admin": "notify-admin",
		"2nd": "", "ok": "",
	}
	for name, want := range tests {
		if got := suggestName(name); got != want {
			t.Errorf("suggestName(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestCanonicalJSON(t *testing.T) {
	w := mustParse(t, "name: j\ninput:\n  type: object\n  properties:\n    b: {type: string, description: \"a <b> & c\"}\n    a: {type: number, minimum: 1.50}\nsteps:\n  - name: s\n")
	want := `{"properties":{"a":{"minimum":1.5,"type":"number"},"b":{"description":"a <b> & c","type":"string"}},"type":"object"}`
	if w.Input.JSON != want {
		t.Errorf("input JSON =\n%s\nwant\n%s", w.Input.JSON, want)
	}
}
