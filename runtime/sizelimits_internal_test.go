package runtime

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNestedDeeper(t *testing.T) {
	for _, c := range []struct {
		doc  string
		max  int
		want bool
	}{
		{`{"a":[1]}`, 2, false},
		{`{"a":[1]}`, 1, true},
		{`[[],[],[[]]]`, 3, false},
		{`[[],[],[[]]]`, 2, true},
		{`["[[[[[[[[[[[[", "{{{{{{{{{{"]`, 1, false}, // brackets in strings do not count
		{`{"a":"\"[[[[[[[[[["}`, 1, false},
		{strings.Repeat("[", 1000), 64, true}, // not JSON, but too deep before it says so
		{`[1,2,`, 0, true},
		{`nonsense that is long enough to be read`, 1, false},
	} {
		if got := nestedDeeper([]byte(c.doc), c.max); got != c.want {
			t.Errorf("nestedDeeper(%.20q, %d) = %v, want %v", c.doc, c.max, got, c.want)
		}
	}
}

// tokenDepth is the nesting depth of a JSON document as encoding/json's
// Decoder reports it, token by token: the reference nestedDeeper must
// agree with on valid JSON.
func tokenDepth(data []byte) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest, err.Error() == "EOF"
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

func FuzzNestedDeeper(f *testing.F) {
	for _, seed := range []string{`{"a":[1,{"b":"[{\\\"]"}]}`, `[[[[[]]]]]`, `"\\"`, `{"\u005b":[[]]}`, `[["]"],{"}":"{"}]`} {
		f.Add([]byte(seed), 2)
	}
	f.Fuzz(func(t *testing.T, doc []byte, limit int) {
		if limit < 0 || limit > 100 || !json.Valid(doc) {
			return
		}
		depth, ok := tokenDepth(doc)
		if !ok {
			return
		}
		if got, want := nestedDeeper(doc, limit), depth > limit; got != want {
			t.Errorf("nestedDeeper(%q, %d) = %v; the Decoder finds depth %d", doc, limit, got, depth)
		}
	})
}

// BenchmarkNestedDeeper measures the depth check on a step output of
// about 1 MiB of ordinary JSON, the most a step may return by default.
func BenchmarkNestedDeeper(b *testing.B) {
	type line struct {
		SKU   string            `json:"sku"`
		Cents int               `json:"cents"`
		Tags  []string          `json:"tags"`
		Attrs map[string]string `json:"attrs"`
	}
	var lines []line
	for len(lines) < 8000 {
		lines = append(lines, line{SKU: "SKU-0001234", Cents: 1999, Tags: []string{"red", "large"}, Attrs: map[string]string{"origin": "NL"}})
	}
	doc, _ := json.Marshal(map[string]any{"lines": lines})
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if nestedDeeper(doc, 64) {
			b.Fatal("too deep")
		}
	}
}
