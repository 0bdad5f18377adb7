package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// The rules these check are on store.Pauses.

func (f *fixture) pause(workflow string, tenants ...string) []store.WorkflowPause {
	f.t.Helper()
	got, err := f.s.PauseWorkflows(f.ctx, workflow, tenants, f.now)
	if err != nil {
		f.t.Fatalf("PauseWorkflows(%s, %q): %v", workflow, tenants, err)
	}
	return got
}

func (f *fixture) resume(workflow string, tenants ...string) []store.WorkflowPause {
	f.t.Helper()
	got, err := f.s.ResumeWorkflows(f.ctx, workflow, tenants)
	if err != nil {
		f.t.Fatalf("ResumeWorkflows(%s, %q): %v", workflow, tenants, err)
	}
	return got
}

func (f *fixture) pauses() []store.WorkflowPause {
	f.t.Helper()
	got, err := f.s.ListPauses(f.ctx)
	if err != nil {
		f.t.Fatalf("ListPauses: %v", err)
	}
	return got
}

// runsOf renders claimed tasks as the runs they belong to.
func runsOf(cs []store.ClaimedTask) []uuid.UUID {
	out := []uuid.UUID{}
	for _, c := range cs {
		out = append(out, c.Key.Run)
	}
	return out
}

// testPauseHoldsClaims checks that a claim takes no task of a paused
// workflow (for every tenant or for one), while other workflows and
// tenants go on, and that a resume releases them.
func testPauseHoldsClaims(t *testing.T, f *fixture) { pauseHoldsClaims(t, f, false) }

// testPauseHoldsCappedClaims is testPauseHoldsClaims under a tenant cap.
func testPauseHoldsCappedClaims(t *testing.T, f *fixture) { pauseHoldsClaims(t, f, true) }

func pauseHoldsClaims(t *testing.T, f *fixture, capped bool) {
	claim := func() []store.ClaimedTask {
		return f.claim(10, func(c *store.Claim) {
			if capped {
				c.TenantLimit = 5
			}
		})
	}
	acme := f.createDiamond(runOpts{tenant: "acme"})
	beta := f.createDiamond(runOpts{tenant: "beta"})
	other := f.createDiamond(runOpts{tenant: "acme", workflow: "other"})

	if got := f.pause("diamond"); len(got) != 1 || got[0].Workflow != "diamond" || got[0].Tenant != "" || !got[0].PausedAt.Equal(f.now) {
		t.Errorf("PauseWorkflows(diamond) = %+v, want the pause for every tenant", got)
	}
	if got := f.pause("diamond"); len(got) != 0 {
		t.Errorf("pausing again made %+v, want nothing", got)
	}
	if got := runsOf(claim()); !cmp.Equal(got, []uuid.UUID{other}) {
		t.Errorf("claimed the roots of %v while diamond is paused, want only the other workflow's %v", got, other)
	}
	want := []store.WorkflowPause{{Workflow: "diamond", PausedAt: f.now, Queued: 2}}
	if diff := cmp.Diff(want, f.pauses()); diff != "" {
		t.Errorf("ListPauses (-want +got):\n%s", diff)
	}

	// Paused for acme too; lifting acme's pause leaves acme paused
	// with every tenant.
	f.pause("diamond", "acme")
	f.resume("diamond", "acme")
	if got := claim(); len(got) != 0 {
		t.Errorf("claimed %v, want nothing: diamond is still paused for every tenant", keys(got))
	}

	// Paused for acme only: beta's root goes.
	f.pause("diamond", "acme")
	if got := f.resume("diamond", ""); len(got) != 1 || got[0].Tenant != "" {
		t.Errorf("ResumeWorkflows(diamond, \"\") = %+v, want the pause for every tenant", got)
	}
	if got := runsOf(claim()); !cmp.Equal(got, []uuid.UUID{beta}) {
		t.Errorf("claimed the roots of %v, want beta's %v only (acme is paused)", got, beta)
	}
	want = []store.WorkflowPause{{Workflow: "diamond", Tenant: "acme", PausedAt: f.now, Queued: 1}}
	if diff := cmp.Diff(want, f.pauses()); diff != "" {
		t.Errorf("ListPauses (-want +got):\n%s", diff)
	}

	// Resuming the workflow lifts every pause of it.
	f.pause("diamond")
	if got := f.resume("diamond"); len(got) != 2 {
		t.Errorf("ResumeWorkflows(diamond) lifted %+v, want both pauses", got)
	}
	if got := runsOf(claim()); !cmp.Equal(got, []uuid.UUID{acme}) {
		t.Errorf("claimed the roots of %v after the resume, want acme's %v", got, acme)
	}
	if got := f.pauses(); len(got) != 0 {
		t.Errorf("ListPauses = %+v after the resume, want none", got)
	}
}

// testPauseHoldsHandOff checks that a completion hands no child of a
// paused workflow to its worker: the child is queued, held, and claimed
// after the resume.
func testPauseHoldsHandOff(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{})
	a := f.claimOne(id, stepA)
	f.pause("diamond")
	f.tick(time.Second)
	// A running task still records its result.
	if res := f.completeHandingOff(5, nil, a); len(res.HandedOff) != 0 || len(res.Stale) != 0 {
		t.Errorf("completing A while paused: handed off %v, stale %v; want neither", keys(res.HandedOff), res.Stale)
	}
	if got := f.statuses(id)[stepB]; got != store.TaskQueued {
		t.Errorf("step b is %s, want QUEUED (held by the pause)", got)
	}
	if got := f.claim(5); len(got) != 0 {
		t.Errorf("claimed %v while paused, want nothing", keys(got))
	}
	if got := f.pauses(); len(got) != 1 || got[0].Queued != 2 {
		t.Errorf("ListPauses = %+v, want one pause holding B and C", got)
	}
	f.resume("diamond")
	if got := f.claim(5); len(got) != 2 {
		t.Errorf("claimed %v after the resume, want B and C", keys(got))
	}
}
