package dashboard

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Limits of a JSON document shown on a page: its indented text is cut
// after maxShown bytes (the page links to the whole document), and a
// document larger than maxIndented is shown as stored, not indented.
const (
	maxShown    = 64 << 10
	maxIndented = 1 << 20
)

// jsonView is a JSON document as a page shows it: indented, and cut when
// large. Text is plain text; the template escapes it like any other.
type jsonView struct {
	Text string
	// Size is the document's size in bytes; Cut is true when Text shows
	// only its beginning.
	Size int
	Cut  bool
}

// newJSONView indents doc for reading, stopping once the text is long
// enough to cut: however large or deeply nested the document, a page
// costs at most maxShown bytes of it. A document that is not valid JSON
// is shown as stored.
func newJSONView(doc []byte) jsonView {
	v := jsonView{Size: len(doc)}
	var text string
	if len(doc) <= maxIndented && json.Valid(doc) {
		text, v.Cut = indent(doc, maxShown)
	} else {
		text = string(doc)
	}
	if len(text) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text, v.Cut = text[:cut], true
	}
	v.Text = text
	return v
}

// indent writes valid JSON two spaces a level, up to about limit bytes,
// and reports whether it stopped short.
func indent(doc []byte, limit int) (string, bool) {
	var b strings.Builder
	depth := 0
	newline := func() {
		b.WriteByte('\n')
		for range depth {
			b.WriteString("  ")
		}
	}
	// next returns the index of the next byte after i that is not white
	// space.
	next := func(i int) int {
		for i++; i < len(doc) && isSpace(doc[i]); i++ {
		}
		return i
	}
	inString, escaped := false, false
	for i := 0; i < len(doc); i++ {
		if b.Len() > limit {
			return b.String(), true
		}
		c := doc[i]
		if inString {
			b.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case isSpace(c):
		case c == '"':
			inString = true
			b.WriteByte(c)
		case c == '{' || c == '[':
			if j := next(i); j < len(doc) && (doc[j] == '}' || doc[j] == ']') {
				b.WriteByte(c)
				b.WriteByte(doc[j])
				i = j
				continue
			}
			b.WriteByte(c)
			depth++
			newline()
		case c == '}' || c == ']':
			depth--
			newline()
			b.WriteByte(c)
		case c == ',':
			b.WriteByte(c)
			newline()
		case c == ':':
			b.WriteString(": ")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
