package dashboard

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONViewIndents(t *testing.T) {
	doc := []byte(` {"a": [1, {"b": "x,:{}[]\" y"}, [], {}], "c": {"d": null}} `)
	var want bytes.Buffer
	if err := json.Indent(&want, bytes.TrimSpace(doc), "", "  "); err != nil {
		t.Fatal(err)
	}
	if v := newJSONView(doc); v.Text != want.String() || v.Cut || v.Size != len(doc) {
		t.Errorf("newJSONView = %+v, want the text json.Indent writes:\n%s", v, want.String())
	}
}

func TestJSONViewCutsWhatIsLarge(t *testing.T) {
	deep := []byte(strings.Repeat("[", 5000) + strings.Repeat("]", 5000))
	wide := []byte(`[` + strings.Repeat(`"é",`, 100_000) + `1]`)
	huge := []byte(`"` + strings.Repeat("x", maxIndented) + `"`)
	invalid := []byte(`{"a": ` + strings.Repeat("y", 100))
	for name, doc := range map[string][]byte{"deep": deep, "wide": wide, "huge": huge} {
		v := newJSONView(doc)
		if !v.Cut || len(v.Text) > maxShown || v.Size != len(doc) {
			t.Errorf("%s: cut %v, %d bytes shown of %d; want at most %d shown", name, v.Cut, len(v.Text), v.Size, maxShown)
		}
		if !strings.HasPrefix(v.Text, string(doc[:1])) || !utf8Valid(v.Text) {
			t.Errorf("%s: the text shown is not the document's beginning, or cuts a character", name)
		}
	}
	if v := newJSONView(invalid); v.Text != string(invalid) || v.Cut {
		t.Errorf("invalid JSON shown as %q, want as stored", v.Text)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
