package graph

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/schema/spec"
	"github.com/google/go-cmp/cmp"
)

// hostile is a workflow whose every piece of text tries to break out of
// its label: quotes, markup, entities, Mermaid directives, comments,
// edges and keywords, DOT escapes, line breaks and ids that collide once
// made safe. The runtime would refuse most of these names; a renderer
// that draws stored or user data must not trust that.
func hostile() *spec.Workflow {
	return &spec.Workflow{
		Name: `evil "graph" {x} \N & <b>`,
		Steps: []spec.Step{
			{Name: `a"]; click a call alert() "x`},
			{Name: "<script>alert('x')</script>", Parents: []string{`a"]; click a call alert() "x`}},
			{Name: "end", Parents: []string{"<script>alert('x')</script>"}},
			{Name: `#quot; &lt; &amp; %%{init: {"theme":"dark"}}%% -->`,
				Parents: []string{"end"},
				SkipIf:  []string{"style:x#60;y", "a\nb\tc\r\nd\x00e", "`md` **bold** <br/> <img src=x onerror=alert(1)>"}},
			{Name: `back\slash \N \" \l`, Sleep: 90 * time.Minute, Parents: []string{"end"},
				SkipIf: []string{`input.x == "</text>" && input.y == '\n'`}},
			{Name: "a-b", Parents: []string{"end"}},
			{Name: "a_b", Parents: []string{"a-b"}},
			{Name: "a_b_2", Parents: []string{"a_b"}, SkipIf: []string{"fa:fa-bomb fab:fa-github $$x^2$$ \\\\n"}},
			{Name: "ünïcode ✓ %% comment", Parents: []string{"a_b_2", "a_b_2", "missing", "ünïcode ✓ %% comment"}},
		},
		OnFailure: &spec.OnFailure{Name: `h"]]-->x; classDef`, Timeout: time.Second},
	}
}

// hostileStatus colours some hostile steps, with hostile statuses.
func hostileStatus() map[string]string {
	return map[string]string{
		"end":                `x"; fill:red`,
		"a-b":                "failed",
		`h"]]-->x; classDef`: "Running",
		"no such step":       "completed",
	}
}

func TestFormats(t *testing.T) {
	for _, f := range Formats() {
		got, err := ParseFormat(string(f))
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, err)
		}
		if _, err := Render(hostile(), f, Options{}); err != nil {
			t.Errorf("Render(%s): %v", f, err)
		}
	}
	if got := Mermaid.Ext() + " " + DOT.Ext(); got != ".mmd .dot" {
		t.Errorf("extensions %q, want .mmd .dot", got)
	}
	if _, err := ParseFormat("svg"); err == nil || !strings.Contains(err.Error(), "use mermaid or dot") {
		t.Errorf("ParseFormat(svg) = %v, want an error naming the formats", err)
	}
	if _, err := Render(hostile(), "svg", Options{}); err == nil {
		t.Error("Render in an unknown format succeeded")
	}
}

// TestLabels checks what each kind of node says.
func TestLabels(t *testing.T) {
	retry := spec.RetryPolicy{MaxRetries: 3, InitialDelay: 500 * time.Millisecond, BackoffFactor: 1.5, MaxDelay: 30 * time.Second}
	long := "size(parents.plan.parcels) == 0 || input.priority == 'standard'"
	w := &spec.Workflow{
		Name: "labels",
		Steps: []spec.Step{
			{Name: "plain"},
			{Name: "limited", Retry: retry, Timeout: 90 * time.Second},
			{Name: "nap", Sleep: 1500 * time.Millisecond, Retry: retry, Timeout: time.Minute},
			{Name: "long", SkipIf: []string{long}},
			{Name: "many", SkipIf: []string{"a", "b", "c", "d", "e"}},
			{Name: "three", SkipIf: []string{"a", "b", "c"}},
		},
		OnFailure: &spec.OnFailure{Name: "handle", Retry: retry, Timeout: 2 * time.Hour},
	}
	g := build(w, Options{})
	got := map[string][]string{}
	tips := map[string]string{}
	for _, n := range g.nodes {
		got[n.id] = n.lines
		tips[n.id] = n.tooltip
	}
	want := map[string][]string{
		"step_plain":   {"plain"},
		"step_limited": {"limited", "retry ×3, timeout 1m30s"},
		"step_nap":     {"nap", "sleep 1.5s"}, // a sleep has no retries or timeout to show
		"step_long":    {"long", "skip if size(parents.plan.parcels) == 0 || …"},
		"step_many":    {"many", "skip if a", "skip if b", "skip if … (3 more)"},
		"step_three":   {"three", "skip if a", "skip if b", "skip if c"},
		"run_fails":    {"run fails"},
		"on_failure":   {"handle", "failure handler, runs once", "retry ×3, timeout 2h"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if want := "long\nskipped if any is true:\n- " + long + "\nnot retried"; tips["step_long"] != want {
		t.Errorf("tooltip of long = %q, want the full condition: %q", tips["step_long"], want)
	}
	if want := "handle\nfailure handler: runs once when the run fails\nretried up to 3 times: after 500ms, then ×1.5 each time, at most 30s\ntimeout 2h per attempt"; tips["on_failure"] != want {
		t.Errorf("tooltip of the handler = %q, want %q", tips["on_failure"], want)
	}
}

func TestTruncate(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"input.total > 100", "input.total > 100"},
		{strings.Repeat("x", 20), strings.Repeat("x", 20)},
		{strings.Repeat("x", 21), strings.Repeat("x", 19) + "…"},
		{"input.a == 1 && input.bbbbbbbbbbbbbbbb", "input.a == 1 && …"},
		{"input.aaaaaaaaaaaaaaaaaa", "input.aaaaaaaaaaaaa…"},     // no word ends near the limit
		{strings.Repeat("ç", 25), strings.Repeat("ç", 19) + "…"}, // runes, not bytes
	} {
		if got := truncate(tt.in, 20); got != tt.want {
			t.Errorf("truncate(%q, 20) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour:                    "24h",
		5 * time.Minute:                   "5m",
		90 * time.Minute:                  "1h30m",
		time.Hour + 30*time.Second:        "1h0m30s",
		30 * time.Second:                  "30s",
		1500 * time.Millisecond:           "1.5s",
		250 * time.Millisecond:            "250ms",
		2*time.Hour + 3*time.Minute + 4e9: "2h3m4s",
	} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestEdges checks which parent links become edges, and that the failure
// handler hangs off its note, not off a step.
func TestEdges(t *testing.T) {
	g := build(hostile(), Options{})
	var got []string
	for _, e := range g.edges {
		s := e.from + " -> " + e.to
		if e.dashed {
			s += " (dashed)"
		}
		got = append(got, s)
	}
	want := []string{
		"step_a____click_a_call_alert____x -> step__script_alert__x____script_",
		"step__script_alert__x____script_ -> step_end",
		"step_end -> step__quot___lt___amp_____init____theme___dark_________",
		"step_end -> step_back_slash__N_____l",
		"step_end -> step_a_b",
		"step_a_b -> step_a_b_2",
		"step_a_b_2 -> step_a_b_2_2",
		// a_b_2 once though listed twice; "missing" and the self-parent left out
		"step_a_b_2_2 -> step__n_code______comment",
		"run_fails -> on_failure (dashed)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
}

var (
	mermaidNode   = regexp.MustCompile(`^    (\w+)(\[\[|\(\[|\[|>)"([^"]*)"(\]\]|\]\)|\])$`)
	mermaidEdge   = regexp.MustCompile(`^    (\w+) (-->|-\.->) (\w+)$`)
	mermaidClass  = regexp.MustCompile(`^    classDef (status_\w+) fill:#[0-9a-f]{6},stroke:#[0-9a-f]{6},color:#000$`)
	mermaidAssign = regexp.MustCompile(`^    class (\w+(?:,\w+)*) (status_\w+)$`)
	mermaidRef    = regexp.MustCompile(`#(\d+);`)
)

// decodeMermaid undoes mermaidEscape and the <br/> line breaks. It drops
// the word joiners mermaidEscape adds; text never holds one of its own
// (it is not graphic, so text makes it a space).
func decodeMermaid(label string) string {
	label = strings.ReplaceAll(label, "<br/>", "\n")
	label = mermaidRef.ReplaceAllStringFunc(label, func(ref string) string {
		n, _ := strconv.Atoi(ref[1 : len(ref)-1])
		return string(rune(n))
	})
	return strings.ReplaceAll(label, "\u2060", "")
}

// TestMermaidHostile checks the shape of every line of the Mermaid output
// for the hostile workflow, that labels hold nothing Mermaid or HTML
// would read as syntax, and that each label reads back as its text.
func TestMermaidHostile(t *testing.T) {
	w := hostile()
	g := build(w, Options{Status: hostileStatus()})
	out, err := Render(w, Mermaid, Options{Status: hostileStatus()})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if lines[0] != "flowchart TD" {
		t.Fatalf("first line %q, want flowchart TD", lines[0])
	}
	labels := map[string]string{}
	classes := map[string]string{}
	for _, l := range lines[1:] {
		switch {
		case mermaidNode.MatchString(l):
			m := mermaidNode.FindStringSubmatch(l)
			raw := strings.ReplaceAll(m[3], "<br/>", "")
			if i := strings.IndexAny(raw, "<>&%:`\"\n"); i >= 0 {
				t.Errorf("label of %s holds %q unescaped: %s", m[1], raw[i], l)
			}
			if strings.Contains(mermaidRef.ReplaceAllString(m[3], ""), "#") {
				t.Errorf("label of %s holds a '#' that starts no character reference: %s", m[1], l)
			}
			labels[m[1]] = decodeMermaid(m[3])
		case mermaidEdge.MatchString(l), mermaidClass.MatchString(l):
		case mermaidAssign.MatchString(l):
			m := mermaidAssign.FindStringSubmatch(l)
			for _, id := range strings.Split(m[1], ",") {
				classes[id] = m[2]
			}
		default:
			t.Errorf("line out of shape: %q", l)
		}
	}
	want := map[string]string{}
	for _, n := range g.nodes {
		want[n.id] = strings.Join(n.lines, "\n")
	}
	if diff := cmp.Diff(want, labels); diff != "" {
		t.Errorf("labels read back (-want +got):\n%s", diff)
	}
	wantClasses := map[string]string{
		"step_end":   "status_x___fill_red",
		"step_a_b":   "status_failed",
		"on_failure": "status_running",
	}
	if diff := cmp.Diff(wantClasses, classes); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
}

var (
	dotQuoted = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
	dotNode   = regexp.MustCompile(`^    "(\w+)" \[(.*)\]$`)
	dotAttr   = regexp.MustCompile(`^(\w+)=(?:"((?:[^"\\]|\\.)*)"|(\w+))$`)
)

// unquoteDOT undoes dotQuote for a string's content.
func unquoteDOT(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return strings.ReplaceAll(b.String(), "&amp;", "&")
}

// TestDOTHostile checks that outside its quoted strings every line of the
// DOT output is plain syntax, and that labels and tooltips read back as
// their text.
func TestDOTHostile(t *testing.T) {
	w := hostile()
	g := build(w, Options{Status: hostileStatus()})
	out, err := Render(w, DOT, Options{Status: hostileStatus()})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if want := `digraph "evil \"graph\" {x} \\N &amp; <b>" {`; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	type attrs struct{ Label, Tooltip, Fill string }
	got := map[string]attrs{}
	for _, l := range lines[1:] {
		bare := strings.ReplaceAll(dotQuoted.ReplaceAllString(l, `""`), " -> ", " ")
		if strings.ContainsAny(bare, `\<>&#;`) {
			t.Errorf("line has syntax outside its strings: %q", l)
		}
		m := dotNode.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var a attrs
		// Split the attributes on the ", " between them, not in strings.
		rest := m[2]
		for rest != "" {
			loc := regexp.MustCompile(`^\w+=(?:"(?:[^"\\]|\\.)*"|\w+)`).FindStringIndex(rest)
			if loc == nil {
				t.Fatalf("attribute list out of shape at %q in %q", rest, l)
			}
			am := dotAttr.FindStringSubmatch(rest[:loc[1]])
			switch am[1] {
			case "label":
				a.Label = unquoteDOT(am[2])
			case "tooltip":
				a.Tooltip = unquoteDOT(am[2])
			case "fillcolor":
				a.Fill = am[2]
			}
			rest = strings.TrimPrefix(rest[loc[1]:], ", ")
		}
		got[m[1]] = a
	}
	want := map[string]attrs{}
	for _, n := range g.nodes {
		a := attrs{Label: strings.Join(n.lines, "\n"), Tooltip: tooltipText(n.tooltip)}
		if n.status != "" {
			a.Fill = statusColours(n.status).fill
		}
		want[n.id] = a
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes read back (-want +got):\n%s", diff)
	}
}

// TestStatus checks the colours of statuses in both formats: the engine's
// statuses in any case, grey for others, nothing for steps without one.
func TestStatus(t *testing.T) {
	w := &spec.Workflow{
		Name:      "colours",
		Steps:     []spec.Step{{Name: "a"}, {Name: "b", Parents: []string{"a"}}, {Name: "c", Parents: []string{"a"}}, {Name: "d", Parents: []string{"b", "c"}}},
		OnFailure: &spec.OnFailure{Name: "h"},
	}
	opts := Options{Status: map[string]string{"a": "COMPLETED", "b": "completed", "c": "FAILED", "h": "paused", "d": ""}}
	mmd, err := Render(w, Mermaid, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantMermaid := "    classDef status_completed fill:#b2f2bb,stroke:#2f9e44,color:#000\n" +
		"    class step_a,step_b status_completed\n" +
		"    classDef status_failed fill:#ffc9c9,stroke:#e03131,color:#000\n" +
		"    class step_c status_failed\n" +
		"    classDef status_paused fill:#e9ecef,stroke:#868e96,color:#000\n" +
		"    class on_failure status_paused\n"
	if !strings.HasSuffix(string(mmd), wantMermaid) {
		t.Errorf("Mermaid classes: got\n%s\nwant it to end with\n%s", mmd, wantMermaid)
	}
	dot, err := Render(w, DOT, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"step_a" [label="a", fillcolor="#b2f2bb", color="#2f9e44", style="filled", tooltip=`,
		`"step_c" [label="c", fillcolor="#ffc9c9", color="#e03131", style="filled", tooltip=`,
		`"step_d" [label="d", tooltip=`,
		`"on_failure" [label="h\nfailure handler, runs once", peripheries=2, fillcolor="#e9ecef", color="#868e96", style="filled", tooltip=`,
	} {
		if !strings.Contains(string(dot), want) {
			t.Errorf("DOT lacks %s\n%s", want, dot)
		}
	}
	plain, err := Render(w, Mermaid, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "class") {
		t.Errorf("without statuses the Mermaid has classes:\n%s", plain)
	}
}

// TestDeterministic renders the same workflow many times, with statuses
// in maps of random iteration order.
func TestDeterministic(t *testing.T) {
	for _, f := range Formats() {
		first, err := Render(hostile(), f, Options{Status: hostileStatus()})
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			again, _ := Render(hostile(), f, Options{Status: hostileStatus()})
			if string(again) != string(first) {
				t.Fatalf("%s output changed between renders:\n%s\n---\n%s", f, first, again)
			}
		}
	}
}
