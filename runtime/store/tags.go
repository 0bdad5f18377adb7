package store

import "maps"

// MergeTags returns the tags of a run a Spawn creates: its parent run's,
// with its own in the place of the parent's where a key is in both; nil
// when neither has any. The result shares nothing with either.
func MergeTags(parent, own map[string]string) map[string]string {
	if len(parent) == 0 && len(own) == 0 {
		return nil
	}
	out := make(map[string]string, len(parent)+len(own))
	maps.Copy(out, parent)
	maps.Copy(out, own)
	return out
}

// HasTags reports whether tags hold every tag of want with the same
// value: what RunQuery.Tags keeps.
func HasTags(tags, want map[string]string) bool {
	for k, v := range want {
		if got, ok := tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}
