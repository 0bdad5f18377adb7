package workflow

import (
	"encoding/json"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Kind is the JSON kind of a Value.
type Kind int

// Value kinds.
const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindList
	KindMap
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "a boolean"
	case KindNumber:
		return "a number"
	case KindString:
		return "a string"
	case KindList:
		return "a list"
	case KindMap:
		return "a mapping"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is a YAML value reduced to what JSON can say, with the position
// of every part kept, so that any check (including JSON Schema validation
// and the Go mapping of schemas) can point at the exact line and column.
type Value struct {
	Kind Kind
	Pos  Pos
	// Str is the text of a string, or the JSON literal of a number.
	Str  string
	Bool bool
	// Items are the elements of a list.
	Items []*Value
	// Fields are the entries of a mapping, in file order.
	Fields []*Field
	// Style is how a string was written (plain, quoted, block), which
	// locating a position inside it depends on.
	Style yaml.Style
}

// Field is one entry of a mapping.
type Field struct {
	Key    string
	KeyPos Pos
	Value  *Value
}

// Get returns the entry of a mapping with the given key, or nil.
func (v *Value) Get(key string) *Field {
	if v == nil || v.Kind != KindMap {
		return nil
	}
	for _, f := range v.Fields {
		if f.Key == key {
			return f
		}
	}
	return nil
}

// Lookup follows a JSON pointer (RFC 6901, such as /steps/0/name) from v.
// It returns the value found and, when the last token selected a mapping
// entry, that entry (whose KeyPos locates the key itself).
func (v *Value) Lookup(pointer string) (*Value, *Field) {
	cur := v
	var field *Field
	if pointer == "" {
		return cur, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		field = nil
		switch {
		case cur == nil:
			return nil, nil
		case cur.Kind == KindMap:
			field = cur.Get(tok)
			if field == nil {
				return nil, nil
			}
			cur = field.Value
		case cur.Kind == KindList:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur.Items) {
				return nil, nil
			}
			cur = cur.Items[i]
		default:
			return nil, nil
		}
	}
	return cur, field
}

// JSON returns the value as encoding/json would decode it, except that
// numbers are json.Number so that they keep their exact text.
func (v *Value) JSON() any {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case KindBool:
		return v.Bool
	case KindNumber:
		return json.Number(v.Str)
	case KindString:
		return v.Str
	case KindList:
		out := make([]any, len(v.Items))
		for i, item := range v.Items {
			out[i] = item.JSON()
		}
		return out
	case KindMap:
		out := make(map[string]any, len(v.Fields))
		for _, f := range v.Fields {
			out[f.Key] = f.Value.JSON()
		}
		return out
	}
	return nil
}

// CanonicalJSON encodes the value as compact JSON with mapping keys sorted
// and no HTML escaping: the stable text generated code embeds.
func (v *Value) CanonicalJSON() (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.JSON()); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
