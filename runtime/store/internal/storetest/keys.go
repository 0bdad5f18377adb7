package storetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// testCreateKeysConcurrently: batches racing with idempotency keys in
// common, each in its own order, all succeed (none deadlocks with
// another) and end with one run per key: every batch gets the same run
// for a key, and exactly one of them created it.
func testCreateKeysConcurrently(t *testing.T, f *fixture) {
	const callers, keys, perBatch = 8, 60, 40
	batches := make([][]store.NewRun, callers)
	for c := range batches {
		r := rand.New(rand.NewPCG(uint64(c), 7))
		for _, k := range r.Perm(keys)[:perBatch] {
			batches[c] = append(batches[c], store.NewRun{
				ID: uuid.Must(uuid.NewV7()), Workflow: "diamond", Version: "diamond@v1", Tenant: "default",
				IdempotencyKey: fmt.Sprintf("key-%02d", k), Input: []byte(`{}`), Tasks: diamondTasks(1),
			})
		}
	}
	results := make([][]store.CreateRunResult, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := f.s.CreateRuns(f.ctx, store.CreateRuns{Runs: batches[c], Now: f.now})
			if err != nil {
				t.Errorf("batch %d: %v", c, err)
			}
			results[c] = res
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	runOf := map[string]uuid.UUID{}
	creators := map[string]int{}
	for c, res := range results {
		if len(res) != perBatch {
			t.Fatalf("batch %d: %d results for %d runs", c, len(res), perBatch)
		}
		for i, r := range res {
			key := batches[c][i].IdempotencyKey
			if id, seen := runOf[key]; seen && id != r.ID {
				t.Errorf("key %s: batch %d got run %s, another batch %s", key, c, r.ID, id)
			}
			runOf[key] = r.ID
			if r.Created {
				creators[key]++
				if r.ID != batches[c][i].ID {
					t.Errorf("key %s: batch %d created run %s under another id %s", key, c, batches[c][i].ID, r.ID)
				}
			}
		}
	}
	for key, id := range runOf {
		if creators[key] != 1 {
			t.Errorf("key %s: %d batches created its run, want 1", key, creators[key])
		}
		if r := f.run(id); r.IdempotencyKey != key {
			t.Errorf("run %s holds key %q, want %q", id, r.IdempotencyKey, key)
		}
	}
	if got := f.claim(10 * keys); len(got) != len(runOf) {
		t.Errorf("claimed %d roots for %d keys: runs were created twice or lost", len(got), len(runOf))
	}
}
