package ops

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// TestActFailedBatch checks that when the store fails a batch, every id of
// it fails, each time it was given, and other batches are not affected.
func TestActFailedBatch(t *testing.T) {
	defer SetActBatch(2)()
	a := &Admin{store: memstore.New()}
	x, y, z := uuid.New(), uuid.New(), uuid.New()
	boom := errors.New("boom")
	do := func(_ context.Context, batch []runtime.RunID) ([]runtime.RunID, error) {
		if batch[0] == x {
			return nil, boom
		}
		return batch, nil
	}
	got := a.act(t.Context(), []runtime.RunID{x, y, x, z}, do, Cancelled, AlreadyEnded)
	want := []ActionResult{
		{Run: x, Outcome: Failed, Error: "boom"},
		{Run: y, Outcome: Failed, Error: "boom"},
		{Run: x, Outcome: Failed, Error: "boom"},
		{Run: z, Outcome: Cancelled},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("act (-want +got):\n%s", diff)
	}
}
