package condition

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/google/cel-go/common/types"
)

// decodeJSON decodes raw JSON keeping numbers exact, so that integers stay
// integers when converted.
func decodeJSON(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// convert turns a decoded JSON value into the CEL-native value the shape
// promises: int64 for integers, time for date-times, objects for declared
// objects. path names the value in errors.
func convert(s *shape, v any, path string) (any, error) {
	if v == nil {
		if s.kind == kindDyn {
			return types.NullValue, nil
		}
		return zero(s), nil
	}
	switch s.kind {
	case kindBool:
		b, ok := v.(bool)
		if !ok {
			return nil, mismatch(path, "a boolean", v)
		}
		return b, nil
	case kindInt:
		n, ok := v.(json.Number)
		if !ok {
			return nil, mismatch(path, "an integer", v)
		}
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
		f, err := n.Float64()
		if err != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt64 {
			return nil, mismatch(path, "an integer", v)
		}
		return int64(f), nil
	case kindDouble:
		n, ok := v.(json.Number)
		if !ok {
			return nil, mismatch(path, "a number", v)
		}
		f, err := n.Float64()
		if err != nil {
			return nil, mismatch(path, "a number", v)
		}
		return f, nil
	case kindString:
		str, ok := v.(string)
		if !ok {
			return nil, mismatch(path, "a string", v)
		}
		return str, nil
	case kindTimestamp:
		str, ok := v.(string)
		if !ok {
			return nil, mismatch(path, "a date-time string", v)
		}
		t, err := time.Parse(time.RFC3339Nano, str)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an RFC 3339 date-time", path, str)
		}
		return t, nil
	case kindList:
		items, ok := v.([]any)
		if !ok {
			return nil, mismatch(path, "an array", v)
		}
		out := make([]any, len(items))
		for i, item := range items {
			c, err := convert(s.elem, item, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case kindMap:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, mismatch(path, "an object", v)
		}
		out := make(map[string]any, len(m))
		for k, item := range m {
			c, err := convert(s.elem, item, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case kindObject:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, mismatch(path, "an object", v)
		}
		obj := &object{typ: s.object, fields: make(map[string]any, len(m))}
		for k, item := range m {
			fs, declared := s.object.fields[k]
			if !declared {
				continue // not visible to conditions
			}
			c, err := convert(fs, item, path+"."+k)
			if err != nil {
				return nil, err
			}
			obj.fields[k] = c
		}
		return obj, nil
	}
	return dynamic(v), nil
}

// dynamic converts JSON of unknown shape: numbers become int64 when they are
// integral and float64 otherwise.
func dynamic(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case []any:
		out := make([]any, len(t))
		for i, item := range t {
			out[i] = dynamic(item)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, item := range t {
			out[k] = dynamic(item)
		}
		return out
	}
	return v
}

func mismatch(path, want string, got any) error {
	return fmt.Errorf("%s: want %s, got %s", path, want, jsonKind(got))
}

func jsonKind(v any) string {
	switch v.(type) {
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}
