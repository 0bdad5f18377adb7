package condition

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// tagsValue is a run's tags as a filter reads them: a map of strings in
// which a tag the run does not have reads as "", as an absent optional
// input field reads as its zero value, so that tags.customer != "acme"
// holds for a run without the tag rather than failing to evaluate.
// Membership (`"customer" in tags`) and the map's size still see only
// the tags the run has.
type tagsValue struct {
	traits.Mapper
}

func newTagsValue(tags map[string]string) ref.Val {
	if tags == nil {
		tags = map[string]string{}
	}
	return tagsValue{types.NewStringStringMap(types.DefaultTypeAdapter, tags)}
}

// Find implements traits.Mapper: an absent string key reads as "".
func (m tagsValue) Find(key ref.Val) (ref.Val, bool) {
	v, ok := m.Mapper.Find(key)
	if !ok {
		if _, str := key.(types.String); str {
			return types.String(""), true
		}
	}
	return v, ok
}

// Get implements traits.Indexer, as Find reads.
func (m tagsValue) Get(key ref.Val) ref.Val {
	v, ok := m.Find(key)
	if !ok {
		return m.Mapper.Get(key)
	}
	return v
}
