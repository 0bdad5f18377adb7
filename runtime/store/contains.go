package store

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
)

// JSONContains reports whether JSON document a contains b as Postgres's
// jsonb @> does (see RunQuery.InputContains); false when either is not
// valid JSON. It reads what jsonb refuses, such as the escape \u0000, so a
// store can check in Go a document Postgres cannot.
func JSONContains(a, b []byte) bool {
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
		return sameNumber(x.String(), y.String())
	}
	return a == b // strings, booleans, null
}

// maxExponent bounds the decimal exponent of a number compared exactly:
// beyond what Postgres's numeric holds, and small enough that expanding
// it costs little. Numbers with larger exponents are equal only when
// written alike, so that a hostile 1e999999999 is never expanded.
const maxExponent = 200_000

// sameNumber compares two JSON numbers by value.
func sameNumber(x, y string) bool {
	if x == y {
		return true
	}
	if !moderate(x) || !moderate(y) {
		return false
	}
	rx, okX := new(big.Rat).SetString(x)
	ry, okY := new(big.Rat).SetString(y)
	return okX && okY && rx.Cmp(ry) == 0
}

// moderate reports whether a JSON number's exponent, if any, is within
// maxExponent.
func moderate(n string) bool {
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return len(n) <= maxExponent
	}
	e, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	return err == nil && e >= -maxExponent && e <= maxExponent && i <= maxExponent
}
