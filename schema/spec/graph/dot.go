package graph

import (
	"fmt"
	"strings"
)

// dot writes the graph as a Graphviz digraph: nodes in declaration order,
// then edges. Every id and string is quoted.
func (g *graph) dot() string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(g.name))
	b.WriteString("    node [shape=box, fontname=\"Helvetica,Arial,sans-serif\", fontsize=11]\n")
	b.WriteString("    edge [color=\"#495057\"]\n")
	for _, n := range g.nodes {
		attrs := []string{"label=" + dotQuote(strings.Join(n.lines, "\n"))}
		var style []string
		switch n.kind {
		case sleepStep:
			attrs = append(attrs, "shape=oval")
		case handler:
			attrs = append(attrs, "peripheries=2")
		case failNote:
			attrs = append(attrs, "shape=note")
			style = append(style, "dashed")
		}
		if n.status != "" {
			c := statusColours(n.status)
			style = append(style, "filled")
			attrs = append(attrs, "fillcolor="+dotQuote(c.fill), "color="+dotQuote(c.stroke))
		}
		if len(style) > 0 {
			attrs = append(attrs, "style="+dotQuote(strings.Join(style, ",")))
		}
		attrs = append(attrs, "tooltip="+dotQuote(tooltipText(n.tooltip)))
		fmt.Fprintf(&b, "    %s [%s]\n", dotQuote(n.id), strings.Join(attrs, ", "))
	}
	for _, e := range g.edges {
		fmt.Fprintf(&b, "    %s -> %s", dotQuote(e.from), dotQuote(e.to))
		if e.dashed {
			b.WriteString(" [style=dashed]")
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.String()
}

// dotQuote writes s as a quoted DOT string whose text Graphviz shows as
// is. Labels and tooltips are escape strings, in which a backslash starts
// an escape (\N is the node's name), so a backslash is doubled; '"' is
// escaped; '&' becomes &amp;, since Graphviz reads HTML character
// references (&lt;) in every string; a line feed becomes \n, a line break.
// Graphviz itself escapes '<' and '>' in SVG.
func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '&':
			b.WriteString("&amp;")
		case '\n':
			b.WriteString(`\n`)
		case '\r':
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tooltipText is the text of a tooltip with each backslash written as
// '⧵' (U+29F5), which looks the same. Graphviz versions disagree on the
// escapes of tooltips: 2.42 (Debian 12) unescapes a tooltip twice, so
// that \\N in the file shows the node's name, while later versions
// unescape it once; no escaping of a backslash reads the same in both.
func tooltipText(s string) string {
	return strings.ReplaceAll(s, `\`, "⧵")
}
