package pgstore

import (
	"encoding/json"
	"maps"
	"slices"
)

// tagsToDB is the JSON object of a run's tags as RunsInsert takes it:
// empty for none (stored as NULL). The engine checked the tags (valid
// UTF-8 without NUL, which jsonb could not hold).
func tagsToDB(tags map[string]string) string {
	if len(tags) == 0 {
		return ""
	}
	b, err := json.Marshal(tags)
	if err != nil { // cannot happen: a map of strings
		return ""
	}
	return string(b)
}

// tagsFromDB reads a run's tags column; nil for NULL.
func tagsFromDB(b []byte) map[string]string {
	if len(b) == 0 {
		return nil
	}
	var tags map[string]string
	if err := json.Unmarshal(b, &tags); err != nil || len(tags) == 0 {
		return nil
	}
	return tags
}

// tagsFilter is the jsonb document OpsRunsScan's runs contain: {} for
// no filter.
func tagsFilter(tags map[string]string) []byte {
	if len(tags) == 0 {
		return []byte(`{}`)
	}
	b, _ := json.Marshal(tags) // a map of strings: cannot fail
	return b
}

// storableTags reports whether Postgres can hold each tag of a filter:
// a tag it cannot hold is no run's.
func storableTags(tags map[string]string) bool {
	return storableText(slices.Collect(maps.Keys(tags))...) && storableText(slices.Collect(maps.Values(tags))...)
}
