// Package graph draws the DAG of a workflow definition as Mermaid or
// Graphviz DOT text: the steps and their parent edges, with sleeps,
// skipIf conditions, retries, timeouts and the failure handler visible,
// and optionally every step coloured by its status. Lay places the same
// drawing's nodes and edges on a plane, for a caller that draws it
// itself (the dashboard draws it as SVG, with no layout engine of its
// own).
//
// It reads only a spec.Workflow, so whatever holds a definition can draw
// it: trellis graph and trellis generate -graph from a workflow file, a
// dashboard from a stored definition and its tasks' statuses. It imports
// only the standard library and runtime/spec.
//
// What the drawing shows:
//
//   - a code step is a box with its name, one "skip if <condition>"
//     line per skipIf condition (any true skips the step), and its retries
//     and timeout ("retry ×3, timeout 30s");
//   - a sleep step is a stadium (Mermaid) or an oval (DOT) reading
//     "sleep 24h", and so is a wait step, reading "wait for delivered by
//     key, 72h then fail";
//   - a map step's box reads "for each <items>", a child workflow step's
//     "starts <workflow>";
//   - the failure handler is a double-bordered box, connected to no step: a
//     dashed edge leads to it from a "run fails" note, because it runs once
//     when any step fails permanently, whichever step that is.
//
// Long conditions are cut to about 40 characters in the label. DOT output
// carries each node's full description in its tooltip, shown on hover in
// SVG (with backslashes drawn as the lookalike '⧵', since Graphviz
// versions disagree on how a tooltip escapes them); Mermaid has no tooltip
// that GitHub shows. A sleep step has no code, so no retries or timeout.
//
// Every piece of text from the definition is escaped for the format, so
// names and conditions holding quotes, '<', '>', '&', '#', '%',
// backslashes or line breaks come out as text, never as markup or syntax;
// line breaks and control characters become spaces. Node ids are derived
// from step names (step_fraud_window), made unique when two names would
// share one. Output is deterministic: steps in declaration order, edges in
// the order of each step's parents, status classes sorted.
package graph

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/effectivelabs/trellis/schema/spec"
)

// Format is a text format a workflow graph is rendered in.
type Format string

// The formats Render writes.
const (
	// Mermaid is a Mermaid flowchart (flowchart TD), which GitHub, GitLab
	// and many Markdown viewers render from a ```mermaid block.
	Mermaid Format = "mermaid"
	// DOT is a Graphviz digraph: dot -Tsvg orders.dot > orders.svg.
	DOT Format = "dot"
)

// Formats lists the formats Render writes, the default first.
func Formats() []Format { return []Format{Mermaid, DOT} }

// ParseFormat returns the format called name (mermaid or dot).
func ParseFormat(name string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == name {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown graph format %q: use mermaid or dot", name)
}

// Ext is the file name extension of the format, with its dot: ".mmd" or
// ".dot".
func (f Format) Ext() string {
	if f == Mermaid {
		return ".mmd"
	}
	return "." + string(f)
}

// Options change what Render draws. The zero value draws the definition
// alone.
type Options struct {
	// Status maps step names, and the failure handler's name, to a status;
	// each step with one is coloured by it. The task statuses of the
	// engine (PENDING, QUEUED, RUNNING, SLEEPING, RETRYING, COMPLETED,
	// SKIPPED, FAILED, CANCELLED, in any case) have colours of their own;
	// any other non-empty status is drawn in a neutral grey. Names that
	// are not in the workflow are ignored.
	//
	// In Mermaid output a status becomes a class, status_<status> in
	// lowercase with anything but letters and digits replaced by '_'
	// (status_completed), declared with classDef, so a page can restyle
	// it; in DOT it sets the node's fill and border colours.
	Status map[string]string
}

// Render draws w, which must not be nil, in format f. The workflow need
// not be valid: parents that name no step are left out, a step listed
// twice as a parent gets one edge, and steps sharing a name get a node
// each (edges come from the first). It fails only for an unknown format.
func Render(w *spec.Workflow, f Format, opts Options) ([]byte, error) {
	g := build(w, opts)
	switch f {
	case Mermaid:
		return []byte(g.mermaid()), nil
	case DOT:
		return []byte(g.dot()), nil
	}
	return nil, fmt.Errorf("unknown graph format %q: use mermaid or dot", f)
}

// kind is what a node of the drawing stands for.
type kind int

const (
	codeStep kind = iota
	sleepStep
	handler
	failNote
)

// node is a node of the drawing, in plain text; each format escapes it.
type node struct {
	id      string   // letters, digits and '_' only, unique in the graph
	step    string   // the step's (or failure handler's) name, "" for the note
	kind    kind     // what the node stands for, which sets its shape
	lines   []string // the label, one entry a line
	tooltip string   // the full description, lines separated by '\n'
	status  string   // the status class key, "" for none
}

type edge struct {
	from, to string
	dashed   bool
}

// graph is the drawing of a workflow, independent of the format.
type graph struct {
	name  string
	nodes []node
	edges []edge
}

// Reserved node ids; step ids all start with "step_".
const (
	failNoteID = "run_fails"
	handlerID  = "on_failure"
)

func build(w *spec.Workflow, opts Options) *graph {
	g := &graph{name: w.Name}
	used := map[string]bool{failNoteID: true, handlerID: true}
	byName := make(map[string]string, len(w.Steps)) // step name -> node id, first declaration wins
	for i := range w.Steps {
		s := &w.Steps[i]
		id := uniqueID("step_"+idPart(s.Name), used)
		if _, dup := byName[s.Name]; !dup {
			byName[s.Name] = id
		}
		g.nodes = append(g.nodes, stepNode(id, s, opts.Status))
	}
	for i := range w.Steps {
		s := &w.Steps[i]
		to := g.nodes[i].id
		seen := map[string]bool{}
		for _, p := range s.Parents {
			from, ok := byName[p]
			if !ok || from == to || seen[from] {
				continue
			}
			seen[from] = true
			g.edges = append(g.edges, edge{from: from, to: to})
		}
	}
	if h := w.OnFailure; h != nil {
		g.nodes = append(g.nodes,
			node{id: failNoteID, kind: failNote, lines: []string{"run fails"},
				tooltip: "A step failed permanently: the run fails and its failure handler runs once."},
			handlerNode(h, opts.Status))
		g.edges = append(g.edges, edge{from: failNoteID, to: handlerID, dashed: true})
	}
	return g
}

func stepNode(id string, s *spec.Step, status map[string]string) node {
	n := node{id: id, step: s.Name, kind: codeStep, lines: []string{text(s.Name)}, status: statusKey(status[s.Name])}
	full := []string{text(s.Name)}
	switch {
	case s.IsSleep():
		n.kind = sleepStep
		n.lines = append(n.lines, "sleep "+duration(s.Sleep))
		full = append(full, "durable sleep of "+duration(s.Sleep))
	case s.IsWait():
		n.kind = sleepStep // waits, running no code, as a sleep does
		line, long := waitText(s.WaitFor)
		n.lines = append(n.lines, line)
		full = append(full, long)
	case s.IsChild():
		n.lines = append(n.lines, "starts "+text(s.Workflow.Name))
		how := "its code builds the input"
		if len(s.Workflow.Input) > 0 {
			how = "its input built by expressions"
		}
		full = append(full, fmt.Sprintf("starts a run of workflow %s (%s) and waits for it", text(s.Workflow.Name), how))
	case s.IsMap():
		n.lines = append(n.lines, "for each "+truncate(text(s.ForEach.Items), maxCondition))
		full = append(full, "runs once for each item of "+text(s.ForEach.Items))
	}
	n.lines = append(n.lines, skipLines(s.SkipIf)...)
	if len(s.SkipIf) > 0 {
		full = append(full, "skipped if any is true:")
		for _, c := range s.SkipIf {
			full = append(full, "- "+text(c))
		}
	}
	if !s.IsSleep() && !s.IsWait() {
		if l := limits(s.Retry, s.Timeout); l != "" {
			n.lines = append(n.lines, l)
		}
		full = append(full, limitsInFull(s.Retry, s.Timeout)...)
	}
	n.tooltip = strings.Join(full, "\n")
	return n
}

func handlerNode(h *spec.OnFailure, status map[string]string) node {
	n := node{id: handlerID, step: h.Name, kind: handler, status: statusKey(status[h.Name])}
	n.lines = []string{text(h.Name), "failure handler, runs once"}
	if l := limits(h.Retry, h.Timeout); l != "" {
		n.lines = append(n.lines, l)
	}
	full := append([]string{text(h.Name), "failure handler: runs once when the run fails"}, limitsInFull(h.Retry, h.Timeout)...)
	n.tooltip = strings.Join(full, "\n")
	return n
}

// Label sizes: a condition longer than maxCondition runes is cut, and at
// most maxConditions conditions are listed.
const (
	maxCondition  = 40
	maxConditions = 3
)

// skipLines are the label lines of a step's skipIf conditions.
// waitText is the label line of a wait step ("wait for delivered by key,
// 72h then skip") and its description in full.
func waitText(w *spec.WaitFor) (line, long string) {
	line = "wait for " + text(w.Event)
	long = "waits for event " + text(w.Event) + " sent to the run"
	if w.Key != "" {
		line += " by key"
		long += " or with key " + text(w.Key)
	}
	if w.Timeout > 0 {
		then := spec.OnTimeoutFail
		if w.SkipsOnTimeout() {
			then = spec.OnTimeoutSkip
		}
		line += ", " + duration(w.Timeout) + " then " + then
		long += fmt.Sprintf("; after %s without one it is %s", duration(w.Timeout), map[bool]string{true: "skipped", false: "failed"}[w.SkipsOnTimeout()])
	}
	return line, long
}

func skipLines(conds []string) []string {
	var out []string
	for i, c := range conds {
		if i == maxConditions-1 && len(conds) > maxConditions {
			out = append(out, fmt.Sprintf("skip if … (%d more)", len(conds)-i))
			break
		}
		out = append(out, "skip if "+truncate(text(c), maxCondition))
	}
	return out
}

// limits is the short form of a step's retries and timeout: "retry ×3,
// timeout 30s", or "" when it has neither.
func limits(r spec.RetryPolicy, timeout time.Duration) string {
	var parts []string
	if r.MaxRetries > 0 {
		parts = append(parts, fmt.Sprintf("retry ×%d", r.MaxRetries))
	}
	if timeout > 0 {
		parts = append(parts, "timeout "+duration(timeout))
	}
	return strings.Join(parts, ", ")
}

// limitsInFull are the tooltip lines of a step's retries and timeout.
func limitsInFull(r spec.RetryPolicy, timeout time.Duration) []string {
	var out []string
	if r.MaxRetries > 0 {
		times := fmt.Sprintf("up to %d times", r.MaxRetries)
		if r.MaxRetries == 1 {
			times = "once"
		}
		out = append(out, fmt.Sprintf("retried %s: after %s, then ×%g each time, at most %s",
			times, duration(r.InitialDelay), r.BackoffFactor, duration(r.MaxDelay)))
	} else {
		out = append(out, "not retried")
	}
	if timeout > 0 {
		out = append(out, "timeout "+duration(timeout)+" per attempt")
	}
	return out
}

// duration prints d the way workflow files spell it: 24h, 5m, 1h30m, 1.5s
// rather than 24h0m0s.
func duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// text makes definition text fit on one line: runs of white space and
// control characters become one space.
func text(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsGraphic(r)
	}), " ")
}

// truncate cuts s to at most max runes, ending a cut string with '…'. It
// cuts after a word when one ends near the limit, so that a condition
// reads "a == 0 || …" rather than "a == 0 || inpu…".
func truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)[:max-1]
	for i := len(r) - 1; i >= len(r)-max/4; i-- {
		if r[i] == ' ' {
			return string(r[:i+1]) + "…"
		}
	}
	return string(r) + "…"
}

// idPart turns a name into the letters, digits and '_' of a node id.
func idPart(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// uniqueID returns base, or base_2, base_3 ... if it is taken, and marks
// the result taken. Valid step names never collide ('-' becomes '_', which
// a name cannot hold); invalid ones might.
func uniqueID(base string, used map[string]bool) string {
	id := base
	for n := 2; used[id]; n++ {
		id = fmt.Sprintf("%s_%d", base, n)
	}
	used[id] = true
	return id
}
