package pgstore

import "github.com/effectivelabs/trellis/runtime/store"

// dbKinds is the one mapping between dag's task kinds and the values of
// trellis_tasks.kind, which schema/0002 names (trellis_kind_code() and
// its siblings) and constrains. The stored values are fixed; dag's
// constants may be renumbered without changing what stored rows mean.
var dbKinds = [...]struct {
	kind store.Kind
	db   int16
}{
	{store.KindCode, 0},      // trellis_kind_code()
	{store.KindSleep, 1},     // trellis_kind_sleep()
	{store.KindOnFailure, 2}, // trellis_kind_on_failure()
	{store.KindWait, 3},      // trellis_kind_wait()
	{store.KindMap, 4},       // trellis_kind_map()
	{store.KindChild, 5},     // trellis_kind_child()
}

// kindToDB is the stored value of a kind; -1, which the column's check
// rejects, for a kind it does not know.
func kindToDB(k store.Kind) int16 {
	for _, m := range dbKinds {
		if m.kind == k {
			return m.db
		}
	}
	return -1
}

// kindFromDB is the kind of a stored value; an invalid store.Kind (-1) for
// a value it does not know, which the column's check keeps out.
func kindFromDB(v int16) store.Kind {
	for _, m := range dbKinds {
		if m.db == v {
			return m.kind
		}
	}
	return -1
}
