// Package termtext makes text that comes from users and steps safe to
// print on a terminal. A step's error, a tenant, an idempotency key, an
// output or an event payload may hold escape sequences that recolour,
// retitle or clear the screen, write the clipboard (OSC 52), overwrite a
// line with a carriage return, or reorder what is shown with Unicode bidi
// overrides. The trellis command passes all it prints through this
// package, so that such characters are shown, escaped, instead of acted
// on.
//
// The characters escaped are the C0 controls (U+0000–U+001F), DEL, the C1
// controls (U+0080–U+009F), the bidi controls (Unicode's Bidi_Control:
// U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and the line and
// paragraph separators (U+2028, U+2029). They are written the way Go's %q
// writes them: \n, \r and \t by name, the other C0 controls as \xNN, the
// rest (DEL too, which JSON may hold) as \uNNNN. Bytes that are not UTF-8 become U+FFFD, the
// replacement character. Backslashes are left as they are: the escaped
// text is for reading; -format json gives the exact value.
//
// Escaping keeps JSON that encoding/json wrote valid and meaning the same:
// such JSON holds none of the C0 controls but the line feeds between its
// lines, and the \uNNNN form of the others is JSON's own.
package termtext

import (
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line returns s escaped for one line of output, a table cell: line feeds
// and tabs are escaped too, so that s cannot break the layout.
func Line(s string) string { return escape(s, false) }

// Text returns s escaped for output of several lines: line feeds and tabs
// are kept, every other character this package escapes is escaped.
func Text(s string) string { return escape(s, true) }

// unsafe reports whether a terminal may act on r rather than show it.
func unsafe(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
		r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

// kept reports whether escape leaves r as it is.
func kept(r rune, layout bool) bool {
	return !unsafe(r) || (layout && (r == '\n' || r == '\t'))
}

func escape(s string, layout bool) string {
	i := firstEscaped(s, layout)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for _, r := range s[i:] { // ranging yields U+FFFD for each byte that is not UTF-8
		if kept(r, layout) {
			b.WriteRune(r)
			continue
		}
		switch r {
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			const hex = "0123456789abcdef"
			if r < 0x20 {
				b.WriteString(`\x`)
				b.WriteByte(hex[r>>4])
				b.WriteByte(hex[r&0xf])
				continue
			}
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hex[r>>shift&0xf])
			}
		}
	}
	return b.String()
}

// firstEscaped returns the index of the first byte of s that escape
// changes, or -1 when s is printed as it is.
func firstEscaped(s string, layout bool) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !kept(r, layout) {
			return i
		}
		i += size
	}
	return -1
}

// Writer passes what is written to it through Text. A character split
// between two writes is held back until its last byte comes; Flush writes
// what is held back when no more comes.
type Writer struct {
	w       io.Writer
	pending []byte // the start of a character whose end has not come yet
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p, escaped, to the underlying writer. It reports all of p
// written unless the underlying writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	buf := append(slices.Clip(w.pending), p...) // a new array: pending is reset below
	cut := len(buf) - incompleteTail(buf)
	out := Text(string(buf[:cut]))
	w.pending = append(w.pending[:0:0], buf[cut:]...)
	if _, err := io.WriteString(w.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back, the start of a character that did not
// end, as U+FFFD.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	out := Text(string(w.pending))
	w.pending = nil
	_, err := io.WriteString(w.w, out)
	return err
}

// incompleteTail returns how many bytes at the end of b are the start of a
// UTF-8 encoding that more bytes could complete.
func incompleteTail(b []byte) int {
	for n := 1; n <= min(len(b), utf8.UTFMax-1); n++ {
		tail := b[len(b)-n:]
		if utf8.RuneStart(tail[0]) {
			if utf8.FullRune(tail) {
				return 0
			}
			return n
		}
	}
	return 0
}
