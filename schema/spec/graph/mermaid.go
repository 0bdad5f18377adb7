package graph

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// mermaid writes the graph as a Mermaid flowchart: nodes in declaration
// order, then edges, then one classDef and one class line per status.
func (g *graph) mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for _, n := range g.nodes {
		open, closing := mermaidShape(n.kind)
		fmt.Fprintf(&b, "    %s%s\"%s\"%s\n", n.id, open, mermaidLabel(n.lines), closing)
	}
	for _, e := range g.edges {
		arrow := "-->"
		if e.dashed {
			arrow = "-.->"
		}
		fmt.Fprintf(&b, "    %s %s %s\n", e.from, arrow, e.to)
	}
	classes := map[string][]string{} // status key -> node ids
	for _, n := range g.nodes {
		if n.status != "" {
			classes[n.status] = append(classes[n.status], n.id)
		}
	}
	keys := make([]string, 0, len(classes))
	for k := range classes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := statusColours(k)
		fmt.Fprintf(&b, "    classDef status_%s fill:%s,stroke:%s,color:#000\n", k, c.fill, c.stroke)
		fmt.Fprintf(&b, "    class %s status_%s\n", strings.Join(classes[k], ","), k)
	}
	return b.String()
}

// mermaidShape returns the brackets of a node's shape: a rectangle for a
// code step, a stadium for a sleep, a subroutine (double sides) for the
// failure handler, and a flag for the note that leads to it.
func mermaidShape(k kind) (open, closing string) {
	switch k {
	case sleepStep:
		return "([", "])"
	case handler:
		return "[[", "]]"
	case failNote:
		return ">", "]"
	}
	return "[", "]"
}

// mermaidLabel joins label lines with <br/> and escapes each.
func mermaidLabel(lines []string) string {
	escaped := make([]string, len(lines))
	for i, l := range lines {
		escaped[i] = mermaidEscape(l)
	}
	return strings.Join(escaped, "<br/>")
}

// mermaidEscape makes s safe inside a quoted Mermaid label. Mermaid turns
// #<decimal>; into the HTML character reference &#<decimal>; before it
// renders a label as HTML, so every character that means something to
// Mermaid or to HTML is written that way:
//
//   - '"' would end the label;
//   - '<', '>' and '&' would be markup or references in the HTML label;
//   - '#' would start a Mermaid entity (#quot;);
//   - '%' could form a %%{...}%% directive, which Mermaid looks for
//     anywhere in the text;
//   - ':' could let Mermaid's clean-up of style lines (a line with
//     "style", ':' and '#' loses its last ';') truncate an entity;
//   - '`' at the start of a label makes it a Markdown string.
//
// Mermaid also reads some text after it has resolved those references,
// where no escape survives: \n is a line break and $$...$$ KaTeX math
// (both seen in Mermaid 11), and fa:fa-name may become an icon. In those sequences an invisible WORD JOINER (U+2060,
// #8288;) goes after the '\', the first '$' or the ':', so that the label
// shows the text as written.
func mermaidEscape(s string) string {
	var b strings.Builder
	for i, c := range s {
		switch c {
		case '"', '<', '>', '&', '#', '%', ':', '`':
			fmt.Fprintf(&b, "#%d;", c)
		default:
			b.WriteRune(c)
		}
		rest := s[i+utf8.RuneLen(c):]
		if c == '\\' && strings.HasPrefix(rest, "n") ||
			c == '$' && strings.HasPrefix(rest, "$") ||
			c == ':' && strings.HasPrefix(rest, "fa-") {
			b.WriteString(wordJoiner)
		}
	}
	return b.String()
}

// wordJoiner is U+2060 as a Mermaid entity: it separates characters
// without showing or allowing a line break between them.
const wordJoiner = "#8288;"
