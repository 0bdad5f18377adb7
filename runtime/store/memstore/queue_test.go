package memstore

import (
	"testing"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/internal/storetest"
)

// TestQueueCountsValidEntries runs the conformance suite and checks,
// after each case, that the queue's counts of valid entries (by tenant,
// workflow and lane: what a hand-off's priority check reads) are those
// of the valid entries in the heap.
func TestQueueCountsValidEntries(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := New()
		t.Cleanup(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			want := map[string]map[runVersion][store.Lanes]int{}
			for _, e := range s.queue.entries {
				if !e.valid() {
					continue
				}
				r := e.task.run.rec
				if want[r.Tenant] == nil {
					want[r.Tenant] = map[runVersion][store.Lanes]int{}
				}
				key := runVersion{r.Workflow, r.Version}
				lanes := want[r.Tenant][key]
				lanes[e.lane]++
				want[r.Tenant][key] = lanes
			}
			for tenant, ts := range s.queue.tenants {
				for workflow, lanes := range ts.valid {
					if *lanes != want[tenant][workflow] {
						t.Errorf("tenant %s, version %v: counted %v valid entries by lane, the heap holds %v", tenant, workflow, *lanes, want[tenant][workflow])
					}
				}
			}
		})
		return s
	})
}

// TestTenantsUnlimited: the memory store's tenant groups wrap around as
// Postgres's do.
func TestTenantsUnlimited(t *testing.T) {
	storetest.RunTenantGroups(t, func(*testing.T) store.Store { return New() }, func(_ *testing.T, s store.Store) {
		m := s.(*Store)
		m.mu.Lock()
		defer m.mu.Unlock()
		// As after 3,145,727 tenants: the groups have wrapped twice, and
		// the next tenant takes the last group.
		m.queue.groups = 3*blockLength - 1
	})
}
