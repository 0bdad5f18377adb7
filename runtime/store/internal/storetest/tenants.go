package storetest

import (
	"testing"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Exhaust makes a store as if it had met so many tenants that the next
// new tenant takes the last of the ready queue's tenant groups, and the
// one after that finds none left: its group space wraps (see
// memstore/fair.go and schema/0015). Each store's tests say how; the
// store has met one tenant when it is called.
type Exhaust func(t *testing.T, s store.Store)

// RunTenantGroups runs the case of the suite that needs a store's help to
// set up: new tenants are still queued, and served fairly, after the
// tenant groups have all been handed out.
func RunTenantGroups(t *testing.T, newStore Factory, exhaust Exhaust) {
	t.Run("TenantsUnlimited", func(t *testing.T) {
		testTenantsUnlimited(t, newFixture(t, newStore), exhaust)
	})
}

func testTenantsUnlimited(t *testing.T, f *fixture, exhaust Exhaust) {
	const backlog = 20
	for range backlog {
		f.createDiamond(runOpts{tenant: "first"}) // the first group
	}
	exhaust(t, f.s)
	for range backlog {
		f.createDiamond(runOpts{tenant: "last"}) // the last group
	}
	// No group is left: "late" shares one with an older tenant, and its
	// one task is still claimed in the current round, behind at most one
	// task of each other tenant.
	late := f.createDiamond(runOpts{tenant: "late"})
	var order []string
	position := -1
	for i := range 2*backlog + 1 {
		c := f.claim(1)
		if len(c) != 1 {
			t.Fatalf("claim %d found nothing; %d tasks are queued", i, 2*backlog+1-i)
		}
		if c[0].Key.Run == late {
			position = i
		}
		order = append(order, c[0].Tenant)
	}
	if position < 0 || position > 2 {
		t.Errorf("the new tenant's task was claimed at position %d, want 0 to 2 (claims: %v)", position, order)
	}
	// The two backlogs share the claims evenly throughout.
	count := map[string]int{}
	for _, tn := range order[:2*backlog/2] {
		count[tn]++
	}
	if count["first"] < backlog/2-2 || count["last"] < backlog/2-2 {
		t.Errorf("the first %d claims went %v; want them shared between first and last (claims: %v)", 2*backlog/2, count, order)
	}
	if got := f.claim(10); len(got) != 0 {
		t.Errorf("claimed %d more tasks; want the queue empty", len(got))
	}
}
