package memstore

import (
	"bytes"
	"encoding/json"
	"math/big"
)

// jsonContains reports whether JSON document a contains b as Postgres's
// jsonb @> does (see store.RunQuery.InputContains); false when either is
// not valid JSON.
func jsonContains(a, b []byte) bool {
	x, okA := decode(a)
	y, okB := decode(b)
	return okA && okB && contains(x, y)
}

func decode(raw []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	return v, dec.Decode(&v) == nil
}

func contains(a, b any) bool {
	switch y := b.(type) {
	case map[string]any:
		x, ok := a.(map[string]any)
		if !ok {
			return false
		}
		for k, yv := range y {
			xv, ok := x[k]
			if !ok || !contains(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		x, ok := a.([]any)
		if !ok {
			return false
		}
	next:
		for _, yv := range y {
			for _, xv := range x {
				if contains(xv, yv) {
					continue next
				}
			}
			return false
		}
		return true
	case json.Number:
		x, ok := a.(json.Number)
		if !ok {
			return false
		}
		rx, okX := new(big.Rat).SetString(x.String())
		ry, okY := new(big.Rat).SetString(y.String())
		return okX && okY && rx.Cmp(ry) == 0
	}
	return a == b // strings, booleans, null
}
