package termtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLineAndText(t *testing.T) {
	tests := []struct {
		name, in, line, text string
	}{
		{"plain", "payment gateway said no", "payment gateway said no", "payment gateway said no"},
		{"non-ASCII letters", "Zürich → 東京 😀", "Zürich → 東京 😀", "Zürich → 東京 😀"},
		{"colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"OSC 52 clipboard write", "\x1b]52;c;cm0gLXJmIH4=\x07", `\x1b]52;c;cm0gLXJmIH4=\x07`, `\x1b]52;c;cm0gLXJmIH4=\x07`},
		{"carriage return overwrite", "ok\rFAILED", `ok\rFAILED`, `ok\rFAILED`},
		{"line feed and tab", "a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"NUL, BEL, DEL", "\x00\a\x7f", `\x00\x07\u007f`, `\x00\x07\u007f`},
		{"C1 CSI", "\u009b31m", `\u009b31m`, `\u009b31m`},
		{"C1 NEL", "a\u0085b", `a\u0085b`, `a\u0085b`},
		{"bidi override", "invoice\u202efdp.exe", `invoice\u202efdp.exe`, `invoice\u202efdp.exe`},
		{"bidi isolates and marks", "\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u2066\u2067\u2068\u2069\u200e\u200f\u061c`, `\u2066\u2067\u2068\u2069\u200e\u200f\u061c`},
		{"line separator", "a\u2028b\u2029c", `a\u2028b\u2029c`, `a\u2028b\u2029c`},
		{"invalid UTF-8", "ab\xffc\xe2\x82", "ab\uFFFDc\uFFFD\uFFFD", "ab\uFFFDc\uFFFD\uFFFD"},
		{"backslashes kept", `C:\tmp\x1b`, `C:\tmp\x1b`, `C:\tmp\x1b`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
			if got := Text(tt.in); got != tt.text {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
			}
		})
	}
}

// TestNothingUnsafeRemains checks every rune and every byte: what Line
// and Text return holds no character a terminal acts on, and is UTF-8.
func TestNothingUnsafeRemains(t *testing.T) {
	var b strings.Builder
	for r := rune(0); r <= 0x3000; r++ {
		b.WriteRune(r)
	}
	for c := 0x80; c <= 0xff; c++ {
		b.WriteByte(byte(c)) // lone bytes, none of them UTF-8
	}
	in := b.String()
	for name, out := range map[string]string{"Line": Line(in), "Text": Text(in)} {
		if !utf8.ValidString(out) {
			t.Errorf("%s returned invalid UTF-8", name)
		}
		for _, r := range out {
			if unsafe(r) && !(name == "Text" && (r == '\n' || r == '\t')) {
				t.Errorf("%s left %U", name, r)
			}
		}
	}
}

// TestJSONStaysJSON checks that escaping JSON that encoding/json wrote
// leaves it valid and meaning the same.
func TestJSONStaysJSON(t *testing.T) {
	value := map[string]any{"error": "\x1b[2J\u009b\u202e\u2066x\u2028\ry\n\x7f", "n": 1.5, "list": []any{"\u0085", "ok"}}
	doc, err := json.MarshalIndent(value, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	escaped := Text(string(doc))
	var got map[string]any
	if err := json.Unmarshal([]byte(escaped), &got); err != nil {
		t.Fatalf("escaped JSON does not parse: %v\n%s", err, escaped)
	}
	want, _ := json.Marshal(value)
	if again, _ := json.Marshal(got); !bytes.Equal(again, want) {
		t.Errorf("escaped JSON means %s, want %s", again, want)
	}
	for _, r := range escaped {
		if unsafe(r) && r != '\n' {
			t.Errorf("escaped JSON holds %U", r)
		}
	}
}

func TestWriterJoinsCharactersSplitBetweenWrites(t *testing.T) {
	in := []byte("é\u202e€😀\x1b[0m\xff")
	for split := 0; split <= len(in); split++ {
		var out bytes.Buffer
		w := NewWriter(&out)
		for _, part := range [][]byte{in[:split], in[split:]} {
			if n, err := w.Write(part); n != len(part) || err != nil {
				t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(part))
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), Text(string(in)); got != want {
			t.Errorf("split at %d: wrote %q, want %q", split, got, want)
		}
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	_, _ = w.Write([]byte("ab\xe2\x82"))
	if out.String() != "ab" {
		t.Errorf("before Flush: %q, want the incomplete character held back", out.String())
	}
	w.Flush()
	if out.String() != "ab\uFFFD\uFFFD" {
		t.Errorf("after Flush: %q, want it as U+FFFD", out.String())
	}
}
