package memstore

import (
	"testing"
	"unsafe"
)

// TestRecordsStaySmall keeps the records the store holds for every run and
// task within 512 bytes: the garbage collector scans objects up to that
// size in bulk, a span at a time, and larger ones one by one. When run
// grew to 568 bytes (issue 30's run limits and debounce), the memory
// store's chain of five ran 8-9% slower, most of it in runtime.scanObject.
// A field that only some runs need belongs in runControl or a struct like
// it, behind a pointer.
func TestRecordsStaySmall(t *testing.T) {
	const most = 512
	for name, size := range map[string]uintptr{"run": unsafe.Sizeof(run{}), "task": unsafe.Sizeof(task{})} {
		if size > most {
			t.Errorf("%s is %d bytes, more than %d: move the fields few of them use behind a pointer", name, size, most)
		}
	}
}
