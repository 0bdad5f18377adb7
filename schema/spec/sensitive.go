package spec

import (
	"encoding/json"
	"fmt"
	"strings"
)

// SensitiveKeyword is the JSON Schema keyword that marks a value as
// sensitive: x-trellis-sensitive: true on a property, on the items of an
// array, on a $defs entry that properties refer to, or on a whole schema.
// Everything under a marked schema is sensitive too. The generator and
// lint read it here; the runtime redacts what it marks (see
// runtime.Definition.RedactInput).
const SensitiveKeyword = "x-trellis-sensitive"

// MaxSensitiveDepth bounds how deep a schema or document is followed to
// find what is marked: below it, everything is taken as marked.
const MaxSensitiveDepth = 64

// maxRefHops bounds how many $refs WithoutSensitive follows to learn
// whether a schema is marked.
const maxRefHops = 32

// WithoutSensitive returns a JSON Schema (of an input, say) without the
// properties whose values it marks sensitive (SensitiveKeyword): marked
// themselves or by reference, or lists or maps of marked values. A marked
// schema as a whole becomes an object schema with no properties. It is
// what a run filter may read: a filter that type-checks against the
// schema but not against this one reads a sensitive value, and could
// disclose it one guess at a time.
func WithoutSensitive(schemaJSON json.RawMessage) (json.RawMessage, error) {
	var root map[string]any
	if err := json.Unmarshal(schemaJSON, &root); err != nil {
		return nil, fmt.Errorf("reading schema: %w", err)
	}
	defs, _ := root["$defs"].(map[string]any)
	var isMarked func(v any, hops int) bool
	isMarked = func(v any, hops int) bool {
		m, ok := v.(map[string]any)
		if !ok || hops > maxRefHops {
			return ok // a $ref chain too long to follow: assume the worst
		}
		if b, _ := m[SensitiveKeyword].(bool); b {
			return true
		}
		if ref, ok := m["$ref"].(string); ok {
			if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok && isMarked(defs[name], hops+1) {
				return true
			}
		}
		return isMarked(m["items"], hops+1) || isMarked(m["additionalProperties"], hops+1)
	}
	if isMarked(root, 0) {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var strip func(v any, depth int)
	strip = func(v any, depth int) {
		m, ok := v.(map[string]any)
		if !ok || depth > MaxSensitiveDepth {
			return
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for name, sub := range props {
				if isMarked(sub, 0) {
					delete(props, name)
					continue
				}
				strip(sub, depth+1)
			}
		}
		for _, key := range []string{"$defs", "patternProperties"} {
			if subs, ok := m[key].(map[string]any); ok {
				for _, sub := range subs {
					strip(sub, depth+1)
				}
			}
		}
		for _, key := range []string{"items", "additionalProperties"} {
			strip(m[key], depth+1)
		}
		for _, key := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
			if subs, ok := m[key].([]any); ok {
				for _, sub := range subs {
					strip(sub, depth+1)
				}
			}
		}
	}
	strip(root, 0)
	return json.Marshal(root)
}
