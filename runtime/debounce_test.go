package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// Debounce through a generated client, on a virtual clock, on both
// stores: testdata/acceptance/reindex.yaml (window 30s, maxWait 5m).

func TestDebounceMemory(t *testing.T) {
	runDebounce(t, memoryHarness)
}

func TestDebouncePostgres(t *testing.T) {
	runDebounce(t, postgresHarness)
}

func runDebounce(t *testing.T, newH newHarness) {
	t.Run("OnlyTheLastTriggerRuns", func(t *testing.T) { testDebounceLast(t, newH) })
	t.Run("MaxWaitBoundsAStream", func(t *testing.T) { testDebounceStream(t, newH) })
}

// reindexSteps records "rebuild <index> <change>".
type reindexSteps struct{ calls calls }

func (s *reindexSteps) Rebuild(_ context.Context, in wf.ReindexInput) error {
	s.calls.add(fmt.Sprintf("rebuild %s %d", in.Index, in.Change))
	return nil
}

func testDebounceLast(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &reindexSteps{}
	client, err := wf.RegisterReindex(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	change := func(index string, n int64) runtime.RunID {
		t.Helper()
		ref, err := client.RunNoWait(t.Context(), wf.ReindexInput{Index: index, Change: n})
		if err != nil {
			t.Fatal(err)
		}
		return ref.ID
	}
	var products []runtime.RunID
	for n := range int64(3) {
		products = append(products, change("products", n))
		h.Advance(10 * time.Second)
	}
	users := change("users", 0)
	if r := h.Result(products[2]); r.Status != runtime.RunRunning || !r.DebouncedUntil.Equal(h.Now().Add(20*time.Second)) {
		t.Errorf("the last run: %s, debounced until %v; want RUNNING until %v", r.Status, r.DebouncedUntil, h.Now().Add(20*time.Second))
	}
	if got := steps.calls.list(); len(got) != 0 {
		t.Fatalf("steps ran inside the window: %v", got)
	}

	for i, id := range products[:2] {
		r := h.Result(id)
		want := "superseded by a newer run " + products[i+1].String() + " of debounce key reindex@debounce:products"
		if r.Status != runtime.RunCancelled || !slices.Contains(cancelDetails(h, id), want) {
			t.Errorf("run %d: %s, %q; want CANCELLED, %q", i, r.Status, cancelDetails(h, id), want)
		}
	}
	h.Advance(20 * time.Second) // the last products run's window passes
	if diff := cmp.Diff([]string{"rebuild products 2"}, steps.calls.list()); diff != "" {
		t.Errorf("steps that ran (-want +got):\n%s", diff)
	}
	h.Settle()
	if r := h.Result(products[2]); r.Status != runtime.RunCompleted || !r.DebouncedUntil.IsZero() {
		t.Errorf("the last run of products ended %s, debounced until %v", r.Status, r.DebouncedUntil)
	}
	if r := h.Result(users); r.Status != runtime.RunCompleted {
		t.Errorf("the run of another key ended %s", r.Status)
	}
	if diff := cmp.Diff([]string{"rebuild products 2", "rebuild users 0"}, steps.calls.list()); diff != "" {
		t.Errorf("steps that ran (-want +got):\n%s", diff)
	}
}

// testDebounceStream: a change every 20s for 12 minutes rebuilds the
// index every 5 minutes (maxWait), with the newest change each time.
func testDebounceStream(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &reindexSteps{}
	client, err := wf.RegisterReindex(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	for n := range int64(36) {
		if _, err := client.RunNoWait(t.Context(), wf.ReindexInput{Index: "products", Change: n}); err != nil {
			t.Fatal(err)
		}
		h.Advance(20 * time.Second)
	}
	h.Settle()
	// Bursts start at 0s, and again with the first change after each
	// rebuild: changes 0-14 (rebuilt at 5m with change 14, made at
	// 4m40s), 15-29 (5m-10m), 30-35 (then quiet: 30s after change 35).
	want := []string{"rebuild products 14", "rebuild products 29", "rebuild products 35"}
	if diff := cmp.Diff(want, steps.calls.list()); diff != "" {
		t.Errorf("rebuilds (-want +got):\n%s", diff)
	}
}
