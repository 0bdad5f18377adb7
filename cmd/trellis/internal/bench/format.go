package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// table prints rows in aligned columns; right[i] right-aligns column i.
type table struct {
	indent string
	right  []bool
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		b.WriteString(t.indent)
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			last := i == len(r)-1
			switch {
			case i < len(t.right) && t.right[i]:
				b.WriteString(pad + c)
			case last:
				b.WriteString(c)
			default:
				b.WriteString(c + pad)
			}
			if !last {
				b.WriteString("  ")
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// count formats an integer with thousands separators.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// rate formats a per-second figure.
func rate(v float64) string { return count(int64(v + 0.5)) }

// dur formats a duration in ms below a second, else in s.
func dur(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond && d > -10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second && d > -time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// bytesIEC formats a byte count.
func bytesIEC(n float64) string {
	switch {
	case n >= 1<<30 || n <= -(1<<30):
		return fmt.Sprintf("%.2f GiB", n/(1<<30))
	case n >= 1<<20 || n <= -(1<<20):
		return fmt.Sprintf("%.1f MiB", n/(1<<20))
	case n >= 1<<10 || n <= -(1<<10):
		return fmt.Sprintf("%.1f KiB", n/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", n)
	}
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }
