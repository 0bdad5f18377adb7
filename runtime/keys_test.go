package runtime_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
)

// testTriggerManyKeysRace: callers in separate engines (as in separate
// processes) race TriggerMany batches whose idempotency keys overlap, each
// in its own order. Every caller succeeds, each key ends with one run
// (every caller that gave it gets that run, and exactly one created it),
// and inputs without a key each get a run of their own.
func testTriggerManyKeysRace(t *testing.T, s store.Store) {
	spec := fanSpec("keyed", 0)
	const callers, keys, perBatch = 6, 50, 30
	batches := make([][]string, callers)
	for c := range batches {
		r := rand.New(rand.NewPCG(uint64(c), 3))
		for _, k := range r.Perm(keys)[:perBatch] {
			key := fmt.Sprintf("order-%02d", k)
			if k%10 == 0 {
				key = "" // some inputs have no key
			}
			batches[c] = append(batches[c], key)
		}
	}
	workflows := make([]*runtime.Workflow, callers)
	for c := range workflows {
		w, err := newEngine(t, s, fmt.Sprintf("caller-%d", c)).Workflow(spec)
		if err != nil {
			t.Fatal(err)
		}
		workflows[c] = w
	}
	refs := make([][]runtime.RunRef, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inputs := make([]json.RawMessage, len(batches[c]))
			for i := range inputs {
				inputs[i] = json.RawMessage(fmt.Sprintf(`{"caller":%d,"i":%d}`, c, i))
			}
			<-start
			var err error
			refs[c], err = workflows[c].TriggerMany(waitCtx(t), inputs, runtime.WithIdempotencyKeys(batches[c]...), runtime.WithTenant("acme"))
			if err != nil {
				t.Errorf("caller %d: %v", c, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	runOf := map[string]runtime.RunID{}
	creators := map[string]int{}
	runs := map[runtime.RunID]bool{}
	keyless := 0
	for c, batch := range batches {
		for i, key := range batch {
			ref := refs[c][i]
			runs[ref.ID] = true
			if key == "" {
				keyless++
				if ref.Existing {
					t.Errorf("caller %d input %d has no key but got an existing run", c, i)
				}
				continue
			}
			if id, seen := runOf[key]; seen && id != ref.ID {
				t.Errorf("key %s: caller %d got run %s, another caller %s", key, c, ref.ID, id)
			}
			runOf[key] = ref.ID
			if !ref.Existing {
				creators[key]++
			}
		}
	}
	for key := range runOf {
		if creators[key] != 1 {
			t.Errorf("key %s: %d callers created its run, want exactly 1", key, creators[key])
		}
	}
	if len(runs) != len(runOf)+keyless {
		t.Errorf("%d runs for %d keys and %d inputs without one", len(runs), len(runOf), keyless)
	}
	// Nothing else was created: the store queued one root per run.
	claimed, err := s.ClaimTasks(t.Context(), store.Claim{Worker: "probe", Limit: 10 * len(runs), Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != len(runs) {
		t.Errorf("claimed %d roots, want %d (one per run)", len(claimed), len(runs))
	}
	for _, c := range claimed {
		if !runs[c.Key.Run] {
			t.Errorf("run %s was created but given to no caller", c.Key.Run)
		}
	}
}
