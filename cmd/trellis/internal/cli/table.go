package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/termtext"
)

// table writes rows as aligned columns, two spaces apart, the way go and
// kubectl print lists: cells are single lines, escaped (see oneLine), the
// last column is not padded. The header, when there is one, is a heading,
// and a cell may have a style (paint), shown when the output takes colour
// (see writeStyled); widths count characters, never escapes.
type table struct {
	w    io.Writer
	rows [][]segment
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{w: w}
	if len(header) > 0 {
		t.row(header...)
		for i := range t.rows[0] {
			t.rows[0][i].st = heading
		}
	}
	return t
}

func (t *table) row(cells ...string) {
	r := make([]segment, len(cells))
	for i, c := range cells {
		r[i] = segment{text: oneLine(c)}
	}
	t.rows = append(t.rows, r)
}

// paint gives cell col of the last row st.
func (t *table) paint(col int, st style) {
	t.rows[len(t.rows)-1][col].st = st
}

// flush writes the table, without the padding that empty last cells
// leave at the ends of lines.
func (t *table) flush() error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r[:max(len(r)-1, 0)] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	var segs []segment
	for _, r := range t.rows {
		last := len(r) - 1
		for last >= 0 && strings.TrimRight(r[last].text, " ") == "" {
			last--
		}
		for i, c := range r[:last+1] {
			if i == last {
				c.text = strings.TrimRight(c.text, " ")
				segs = append(segs, c)
				break
			}
			segs = append(segs, c, segment{text: strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+2)})
		}
		segs = append(segs, segment{text: "\n"})
	}
	return writeStyled(t.w, segs...)
}

// oneLine makes s fit a cell and safe to print: line breaks, tabs and
// every other character a terminal would act on are shown escaped.
func oneLine(s string) string { return termtext.Line(s) }

// truncate shortens s to n characters, marking the cut with an ellipsis;
// escapes count as the characters they are shown with.
func truncate(s string, n int) string {
	s = oneLine(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// timestamp prints a time in UTC, to the second; "-" for none.
func timestamp(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// eventTime prints a time in UTC to the millisecond, for event logs whose
// entries are often milliseconds apart.
func eventTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// ago prints how long before now t was: "12s ago".
func ago(now, t time.Time) string { return shortDuration(now.Sub(t)) + " ago" }

// shortDuration prints a duration with at most two units, to the
// precision a person reads: 850ms, 4.2s, 42s, 5m12s, 3h04m, 2d03h.
func shortDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Round(100*time.Millisecond).Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// printJSON writes v as indented JSON, escaped as termtext escapes text
// (which keeps it JSON, meaning the same): encoding/json leaves bidi and
// C1 controls as they are.
func printJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(w, termtext.Text(b.String()))
	return err
}

// indentJSON prints a JSON document indented, each line prefixed, and
// escaped; a document that does not parse is printed as it is, escaped
// as one line.
func indentJSON(w io.Writer, prefix string, raw json.RawMessage) {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, prefix, "  "); err != nil {
		fmt.Fprintf(w, "%s%s\n", prefix, termtext.Line(string(raw)))
		return
	}
	fmt.Fprintf(w, "%s%s\n", prefix, termtext.Text(b.String()))
}
