package workflow

import (
	"encoding/json"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/effectivelabs/trellis/schema/condition"
	"github.com/effectivelabs/trellis/schema/spec"
)

// checkConditions type-checks every skipIf condition against the input
// schema and the output schemas of the step's declared parents, with the
// runtime's own condition package, so that a condition that lints clean
// is one the runtime compiles. Conditions of steps whose schemas have
// problems are only checked for syntax: the schema problems are reported
// already, and type-checking against a broken schema would only add noise.
func checkConditions(w *Workflow, lines [][]byte, probs *Problems) {
	for _, s := range w.Steps {
		if len(s.SkipIf) == 0 && !s.IsMap() && !(s.IsChild() && s.Child.Input != nil) {
			continue
		}
		parents, ok := parentSchemas(w, s)
		if !ok || w.Input == nil || !w.Input.OK {
			for _, e := range s.SkipIf {
				for _, iss := range condition.Parse(e.Source) {
					probs.Add(exprPos(lines, e, iss.Line, iss.Column), "", "invalid skipIf condition: %s", iss.Message)
				}
			}
			if s.IsMap() {
				for _, iss := range condition.Parse(s.ForEach.Items.Source) {
					probs.Add(exprPos(lines, s.ForEach.Items, iss.Line, iss.Column), "", "invalid forEach items: %s", iss.Message)
				}
			}
			if s.IsChild() {
				for _, f := range s.Child.Input {
					for _, iss := range condition.Parse(f.Expr.Source) {
						probs.Add(exprPos(lines, f.Expr, iss.Line, iss.Column), "", "invalid input field %s of workflow %s: %s", f.Name, s.Child.Name, iss.Message)
					}
				}
			}
			continue
		}
		env, err := condition.NewEnv(json.RawMessage(w.Input.JSON), parents)
		if err != nil {
			probs.Add(s.SkipIf[0].Pos, "", "cannot type-check the skipIf conditions of step %q: %v", s.Name, err)
			continue
		}
		for _, e := range s.SkipIf {
			_, issues := env.Compile(e.Source)
			for _, iss := range issues {
				probs.Add(exprPos(lines, e, iss.Line, iss.Column), "", "invalid skipIf condition: %s%s", iss.Message, dashHint(iss.Message, s))
			}
		}
		if s.IsMap() {
			checkItems(s, env, lines, probs)
			markSensitiveItems(s, w.Input.JSON, parents)
		}
		checkChildInput(s, env, lines, probs)
	}
}

// checkItems type-checks the items of a map step and derives the schema
// of one item from their type.
func checkItems(s *Step, env *condition.Env, lines [][]byte, probs *Problems) {
	e := s.ForEach.Items
	x, issues := env.CompileList(e.Source)
	for _, iss := range issues {
		probs.Add(exprPos(lines, e, iss.Line, iss.Column), "", "invalid forEach items: %s%s", iss.Message, dashHint(iss.Message, s))
	}
	if x == nil {
		return
	}
	item := NewProblems("")
	root := load([]byte(x.ItemSchema), item)
	if root == nil || item.Len() > 0 {
		probs.Add(e.Pos, "", "forEach items of step %q: cannot describe one item: %v", s.Name, item.List())
		return
	}
	relocate(root, e.Pos) // problems with the item type point at the expression
	s.ForEach.Item = &Schema{Value: root, JSON: x.ItemSchema, OK: true}
}

// markSensitiveItems marks the items of a map step sensitive when its
// forEach reads a value its schemas mark sensitive (a list of marked
// card numbers, say): the type of an item, and so the schema derived from
// it, cannot carry the mark, and the items runs' inputs would show the
// values. Items that are objects keep the marks of their own properties.
func markSensitiveItems(s *Step, input string, parents map[string]json.RawMessage) {
	if s.ForEach.Item == nil {
		return
	}
	marks := strings.Contains(input, spec.SensitiveKeyword)
	for _, p := range parents {
		marks = marks || strings.Contains(string(p), spec.SensitiveKeyword)
	}
	if !marks {
		return
	}
	strip := func(schema json.RawMessage) (json.RawMessage, bool) {
		if len(schema) == 0 {
			return schema, true
		}
		out, err := spec.WithoutSensitive(schema)
		return out, err == nil
	}
	in, ok := strip(json.RawMessage(input))
	stripped := make(map[string]json.RawMessage, len(parents))
	for name, p := range parents {
		var pok bool
		stripped[name], pok = strip(p)
		ok = ok && pok
	}
	if ok {
		if env, err := condition.NewEnv(in, stripped); err == nil {
			if _, issues := env.CompileList(s.ForEach.Items.Source); len(issues) == 0 {
				return // it reads nothing sensitive
			}
		}
	}
	var item map[string]any
	if err := json.Unmarshal([]byte(s.ForEach.Item.JSON), &item); err != nil {
		return
	}
	item[spec.SensitiveKeyword] = true
	marked, err := json.Marshal(item)
	if err != nil {
		return
	}
	s.ForEach.Item.JSON = string(marked)
}

// dashHint explains the likely cause when a condition names part of a
// parent whose name holds a '-': CEL reads parents.fraud-window as
// parents.fraud minus window.
func dashHint(msg string, s *Step) string {
	for _, p := range s.Parents {
		head, _, ok := strings.Cut(p.Name, "-")
		if ok && strings.Contains(msg, fmt.Sprintf("%q is not a parent", head)) {
			return fmt.Sprintf("; CEL reads parents.%s as a subtraction: write parents.%#q", p.Name, p.Name)
		}
	}
	return ""
}

// parentSchemas returns the output schemas of the declared parents of s
// that exist (nil for parents without output), and false when one of them
// did not compile.
func parentSchemas(w *Workflow, s *Step) (map[string]json.RawMessage, bool) {
	out := make(map[string]json.RawMessage, len(s.Parents))
	for _, ref := range s.Parents {
		p, ok := w.Step(ref.Name)
		if !ok || p == s {
			continue
		}
		switch {
		case p.Output == nil || p.IsSleep():
			out[ref.Name] = nil
		case !p.Output.OK:
			return nil, false
		case p.IsMap():
			out[ref.Name] = json.RawMessage(`{"type":"array","items":` + p.Output.JSON + `}`)
		default:
			out[ref.Name] = json.RawMessage(p.Output.JSON)
		}
	}
	return out, true
}

// exprPos converts a position within a condition (line and column, from
// 1, counting characters of the decoded text) into a position in the
// file, following how the scalar was written: quotes and escapes on a
// single line are walked exactly; block scalars start on the line after
// their indicator, at their indentation.
func exprPos(lines [][]byte, e Expr, line, col int) Pos {
	start := e.Pos
	if start.Line < 1 || start.Line > len(lines) {
		return start
	}
	if e.style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		l := start.Line + line
		if l > len(lines) {
			return start
		}
		// The block's indentation is that of its first line; deeper lines
		// keep the extra indentation in their text, and so in col.
		return Pos{Line: l, Column: indentation(lines[start.Line]) + col}
	}
	if line > 1 {
		return Pos{Line: start.Line + line - 1, Column: col}
	}
	text := []rune(string(lines[start.Line-1]))
	i := start.Column - 1
	switch {
	case e.style&yaml.DoubleQuotedStyle != 0:
		i++
		for n := 1; n < col && i < len(text); n++ {
			i += escapeLen(text, i)
		}
	case e.style&yaml.SingleQuotedStyle != 0:
		i++
		for n := 1; n < col && i < len(text); n++ {
			if text[i] == '\'' && i+1 < len(text) && text[i+1] == '\'' {
				i += 2
				continue
			}
			i++
		}
	default:
		i += col - 1
	}
	return Pos{Line: start.Line, Column: i + 1}
}

// escapeLen is the length in the source of the character at text[i] of
// a double-quoted YAML scalar: 1, or the length of its escape sequence.
func escapeLen(text []rune, i int) int {
	if text[i] != '\\' || i+1 >= len(text) {
		return 1
	}
	switch text[i+1] {
	case 'x':
		return 4
	case 'u':
		return 6
	case 'U':
		return 10
	}
	return 2
}

func indentation(line []byte) int {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n
}

// relocate moves every position in v to pos.
func relocate(v *Value, pos Pos) {
	v.Pos = pos
	for _, it := range v.Items {
		relocate(it, pos)
	}
	for _, f := range v.Fields {
		f.KeyPos = pos
		relocate(f.Value, pos)
	}
}
