package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxNodes bounds the values a file may expand to. Aliases can make a tiny
// file expand exponentially ("billion laughs"); no real workflow comes
// near this.
const maxNodes = 100_000

// yamlLine extracts the line from yaml.v3 syntax errors ("yaml: line 3:
// did not find expected key").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// load parses src as a single YAML document and converts it to a Value.
// It returns nil when the file cannot be read as YAML at all.
func load(src []byte, probs *Problems) *Value {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			probs.Add(Pos{1, 1}, "", "file is empty: a workflow needs at least name, input and steps")
			return nil
		}
		addYAMLError(probs, err, src)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		probs.Add(Pos{extra.Line, extra.Column}, "", "a second YAML document starts here; a workflow file holds exactly one document (remove the '---' and what follows, or move it to its own file)")
	} else if !errors.Is(err, io.EOF) {
		addYAMLError(probs, err, src)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		probs.Add(Pos{1, 1}, "", "file is empty: a workflow needs at least name, input and steps")
		return nil
	}
	c := &converter{probs: probs, active: map[*yaml.Node]bool{}, budget: maxNodes}
	return c.value(doc.Content[0])
}

// addYAMLError reports a syntax error. yaml.v3 reports lines
// inconsistently: its parser errors ("did not find expected ...") give the
// 0-based line where the unfinished construct starts, and tab errors the
// line of the enclosing block; both are corrected here so that the
// position points at (or just before) the mistake.
func addYAMLError(probs *Problems, err error, src []byte) {
	msg := trimYAMLPrefix(err.Error())
	pos := Pos{Line: 1, Column: 1}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		pos.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	lines := strings.Split(string(src), "\n")
	switch {
	case strings.HasPrefix(msg, "did not find expected"):
		pos.Line++
	case strings.Contains(msg, "tab character"):
		for i := max(pos.Line-1, 0); i < len(lines); i++ {
			if indent := strings.TrimLeft(lines[i], " "); strings.HasPrefix(indent, "\t") {
				pos = Pos{Line: i + 1, Column: len(lines[i]) - len(indent) + 1}
				msg += "; indent with spaces"
				break
			}
		}
	case strings.HasPrefix(msg, "unknown anchor"):
		if name, ok := strings.CutPrefix(msg, "unknown anchor '"); ok {
			name, _, _ = strings.Cut(name, "'")
			for i, line := range lines {
				if col := strings.Index(line, "*"+name); col >= 0 {
					pos = Pos{Line: i + 1, Column: utf8.RuneCountInString(line[:col]) + 1}
					break
				}
			}
		}
	}
	pos.Line = min(pos.Line, len(lines))
	probs.Add(pos, "", "invalid YAML: %s", msg)
}

func trimYAMLPrefix(msg string) string { return strings.TrimPrefix(msg, "yaml: ") }

// converter turns yaml.Nodes into Values, reporting what JSON cannot say:
// repeated keys, merge keys, non-scalar keys, custom tags, non-finite
// numbers, and aliases that refer to themselves.
type converter struct {
	probs     *Problems
	active    map[*yaml.Node]bool // anchors being expanded, to stop alias loops
	budget    int
	exhausted bool
}

func posOf(n *yaml.Node) Pos { return Pos{Line: n.Line, Column: n.Column} }

func (c *converter) value(n *yaml.Node) *Value {
	if c.budget--; c.budget < 0 {
		if !c.exhausted {
			c.exhausted = true
			c.probs.Add(posOf(n), "", "the file expands to more than %d values (through aliases?); simplify it", maxNodes)
		}
		return &Value{Kind: KindNull, Pos: posOf(n)}
	}
	switch n.Kind {
	case yaml.AliasNode:
		return c.alias(n)
	case yaml.ScalarNode:
		return c.scalar(n)
	case yaml.SequenceNode:
		v := &Value{Kind: KindList, Pos: posOf(n), Items: make([]*Value, 0, len(n.Content))}
		for _, item := range n.Content {
			v.Items = append(v.Items, c.value(item))
		}
		return v
	case yaml.MappingNode:
		return c.mapping(n)
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			return c.value(n.Content[0])
		}
	}
	return &Value{Kind: KindNull, Pos: posOf(n)}
}

func (c *converter) alias(n *yaml.Node) *Value {
	target := n.Alias
	if target == nil {
		return &Value{Kind: KindNull, Pos: posOf(n)}
	}
	if c.active[target] {
		c.probs.Add(posOf(n), "", "alias *%s refers to the value that contains it; a workflow must be finite", n.Value)
		return &Value{Kind: KindNull, Pos: posOf(n)}
	}
	c.active[target] = true
	v := c.value(target)
	delete(c.active, target)
	return v
}

func (c *converter) scalar(n *yaml.Node) *Value {
	v := &Value{Kind: KindString, Pos: posOf(n), Str: n.Value, Style: n.Style}
	switch tag := n.ShortTag(); tag {
	case "!!null":
		v.Kind, v.Str = KindNull, ""
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			c.probs.Add(v.Pos, "", "%q is not a boolean: write true or false", n.Value)
		}
		v.Kind, v.Str, v.Bool = KindBool, "", b
	case "!!int":
		v.Kind = KindNumber
		var x any
		if err := n.Decode(&x); err != nil {
			c.probs.Add(v.Pos, "", "%q is not a number JSON can represent", n.Value)
			v.Str = "0"
			break
		}
		v.Str = numberText(x)
	case "!!float":
		v.Kind = KindNumber
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			c.probs.Add(v.Pos, "", "%q is not a finite number; JSON has no infinity or NaN", n.Value)
			v.Str = "0"
			break
		}
		v.Str = strconv.FormatFloat(f, 'g', -1, 64)
	case "!!str", "!!timestamp", "!!binary":
		// Dates stay the text they were written as: JSON has no date type.
	default:
		c.probs.Add(v.Pos, "", "YAML tag %s is not supported; write a plain value", tag)
	}
	return v
}

// numberText is the JSON literal of an integer yaml.v3 decoded.
func numberText(x any) string {
	switch t := x.(type) {
	case int:
		return strconv.Itoa(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case uint64:
		return strconv.FormatUint(t, 10)
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	}
	return fmt.Sprint(x)
}

func (c *converter) mapping(n *yaml.Node) *Value {
	v := &Value{Kind: KindMap, Pos: posOf(n)}
	first := map[string]Pos{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key, ok := c.key(k)
		if !ok {
			continue
		}
		if at, dup := first[key]; dup {
			c.probs.Add(posOf(k), "", "key %q is repeated (first at line %d); keep one", key, at.Line)
			continue
		}
		first[key] = posOf(k)
		v.Fields = append(v.Fields, &Field{Key: key, KeyPos: posOf(k), Value: c.value(val)})
	}
	return v
}

// key returns the text of a mapping key, which JSON requires to be a
// string; scalars such as 200 or true are taken as their text.
func (c *converter) key(k *yaml.Node) (string, bool) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		c.probs.Add(posOf(k), "", "a mapping key must be a plain string, not %s", nodeKind(k))
		return "", false
	}
	switch k.ShortTag() {
	case "!!merge":
		c.probs.Add(posOf(k), "", "merge keys (<<) are not supported; write the keys out")
		return "", false
	case "!!null":
		c.probs.Add(posOf(k), "", "a mapping key must be a string, not null")
		return "", false
	}
	return k.Value, true
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a scalar"
}
