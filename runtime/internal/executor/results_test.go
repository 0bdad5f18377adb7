package executor

import (
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// TestEveryResultKindIsHandled fills a store.Results with one result of
// each kind, found by reflection, so that a kind added to the port
// without being counted here (Len), released after recording
// (attempts), merged (merge) or split when refused (split) fails.
func TestEveryResultKindIsHandled(t *testing.T) {
	var r store.Results
	v := reflect.ValueOf(&r).Elem()
	kinds := 0
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice {
			continue
		}
		kinds++
		elem := reflect.New(f.Type().Elem()).Elem()
		a := elem.FieldByName("Attempt")
		if !a.IsValid() {
			t.Fatalf("%s results have no Attempt", v.Type().Field(i).Name)
		}
		a.Set(reflect.ValueOf(store.Attempt{Key: store.TaskKey{Run: uuid.New(), Step: i}, Attempt: 1}))
		f.Set(reflect.Append(f, elem))
	}
	if r.Len() != kinds {
		t.Errorf("Len = %d, want %d (one per kind)", r.Len(), kinds)
	}
	if n := len(attempts(r)); n != kinds {
		t.Errorf("attempts lists %d, want %d", n, kinds)
	}
	if n := len(split(r)); n != kinds {
		t.Errorf("split makes %d batches, want %d", n, kinds)
	}
	var merged store.Results
	Merge(&merged, r)
	if merged.Len() != kinds {
		t.Errorf("merge kept %d, want %d", merged.Len(), kinds)
	}
}
