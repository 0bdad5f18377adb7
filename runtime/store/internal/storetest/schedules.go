package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime/store"
)

// putSchedule calls PutSchedule at the fixture's time.
func (f *fixture) putSchedule(sc store.Schedule) store.PutScheduleResult {
	f.t.Helper()
	res, err := f.s.PutSchedule(f.ctx, store.PutSchedule{Schedule: sc, Now: f.now})
	if err != nil {
		f.t.Fatalf("PutSchedule(%s/%s): %v", sc.Workflow, sc.Name, err)
	}
	return res
}

func (f *fixture) listSchedules(workflows ...string) []store.Schedule {
	f.t.Helper()
	got, err := f.s.ListSchedules(f.ctx, store.ScheduleQuery{Workflows: workflows})
	if err != nil {
		f.t.Fatalf("ListSchedules(%v): %v", workflows, err)
	}
	return got
}

// scheduleNames renders schedules as workflow/name.
func scheduleNames(ss []store.Schedule) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.Workflow+"/"+s.Name)
	}
	return out
}

// inputsAsJSON compares schedules' inputs as JSON values, which is all a
// store keeps of them.
var inputsAsJSON = cmp.Comparer(func(a, b store.Schedule) bool {
	return a.SameSettings(b) && a.Workflow == b.Workflow && a.Name == b.Name && a.Paused == b.Paused &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
})

// testSchedulePut checks that PutSchedule creates a schedule, leaves one
// with the same settings alone (idempotent), and updates one whose
// settings differ, keeping when it was created.
func testSchedulePut(t *testing.T, f *fixture) {
	nightly := store.Schedule{Workflow: "reports", Name: "nightly", Cron: "0 3 * * *", Timezone: "Europe/Amsterdam", Input: []byte(`{"kind":"digest","n":1}`), Tenant: "acme"}
	created := f.now
	res := f.putSchedule(nightly)
	want := nightly
	want.CreatedAt, want.UpdatedAt = created, created
	if !res.Created || res.Updated {
		t.Errorf("first PutSchedule: Created %v, Updated %v; want created", res.Created, res.Updated)
	}
	if diff := cmp.Diff(want, res.Schedule, inputsAsJSON); diff != "" {
		t.Errorf("created schedule (-want +got):\n%s", diff)
	}

	// The same settings, the input's keys in another order: nothing
	// changes, not even UpdatedAt.
	f.tick(time.Minute)
	same := nightly
	same.Input = []byte(`{ "n": 1, "kind": "digest" }`)
	if res := f.putSchedule(same); res.Created || res.Updated {
		t.Errorf("PutSchedule with the same settings: Created %v, Updated %v; want neither", res.Created, res.Updated)
	} else if diff := cmp.Diff(want, res.Schedule, inputsAsJSON); diff != "" {
		t.Errorf("unchanged schedule (-want +got):\n%s", diff)
	}

	// Each setting that differs updates the schedule.
	changes := []func(*store.Schedule){
		func(s *store.Schedule) { s.Cron = "0 4 * * *" },
		func(s *store.Schedule) { s.Timezone = "" },
		func(s *store.Schedule) { s.Tenant = "beta" },
		func(s *store.Schedule) { s.Input = []byte(`{"kind":"digest","n":2}`) },
	}
	for i, change := range changes {
		updated := f.tick(time.Minute)
		change(&want)
		res := f.putSchedule(want)
		if res.Created || !res.Updated {
			t.Errorf("change %d: Created %v, Updated %v; want updated", i, res.Created, res.Updated)
		}
		want.UpdatedAt = updated
		if diff := cmp.Diff(want, res.Schedule, inputsAsJSON); diff != "" {
			t.Errorf("change %d: updated schedule (-want +got):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff([]store.Schedule{want}, f.listSchedules(), inputsAsJSON); diff != "" {
		t.Errorf("ListSchedules (-want +got):\n%s", diff)
	}
}

// testScheduleNames checks that names are unique per workflow, not
// across workflows, and that listing filters by workflow and sorts.
func testScheduleNames(t *testing.T, f *fixture) {
	for _, ws := range [][2]string{{"reports", "b"}, {"reports", "a"}, {"billing", "b"}, {"audit", "a"}} {
		f.putSchedule(store.Schedule{Workflow: ws[0], Name: ws[1], Cron: "@hourly", Input: []byte(`{}`), Tenant: "default"})
	}
	if diff := cmp.Diff([]string{"audit/a", "billing/b", "reports/a", "reports/b"}, scheduleNames(f.listSchedules())); diff != "" {
		t.Errorf("ListSchedules() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"billing/b", "reports/a", "reports/b"}, scheduleNames(f.listSchedules("reports", "billing", "nope"))); diff != "" {
		t.Errorf("ListSchedules(reports, billing) (-want +got):\n%s", diff)
	}
	if got := f.listSchedules("nope"); len(got) != 0 {
		t.Errorf("ListSchedules(nope) = %v, want none", scheduleNames(got))
	}
}

// testScheduleDelete checks that DeleteSchedule deletes one schedule and
// says when there is none.
func testScheduleDelete(t *testing.T, f *fixture) {
	for _, w := range []string{"reports", "billing"} {
		f.putSchedule(store.Schedule{Workflow: w, Name: "hourly", Cron: "@hourly", Input: []byte(`{}`), Tenant: "default"})
	}
	if err := f.s.DeleteSchedule(f.ctx, "reports", "hourly"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"billing/hourly"}, scheduleNames(f.listSchedules())); diff != "" {
		t.Errorf("after deleting reports/hourly (-want +got):\n%s", diff)
	}
	if err := f.s.DeleteSchedule(f.ctx, "reports", "hourly"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting it again = %v, want ErrNotFound", err)
	}
	// Deleted, it can be created anew.
	if res := f.putSchedule(store.Schedule{Workflow: "reports", Name: "hourly", Cron: "@daily", Input: []byte(`{}`), Tenant: "default"}); !res.Created {
		t.Errorf("PutSchedule after delete did not create")
	}
}

// testSchedulePause checks pausing and resuming: UpdatedAt moves when the
// state changes only, and PutSchedule keeps the state.
func testSchedulePause(t *testing.T, f *fixture) {
	sc := store.Schedule{Workflow: "reports", Name: "hourly", Cron: "@hourly", Input: []byte(`{}`), Tenant: "default"}
	f.putSchedule(sc)
	paused := f.tick(time.Minute)
	for range 2 { // pausing a paused schedule changes nothing
		got, err := f.s.PauseSchedule(f.ctx, "reports", "hourly", true, f.now)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Paused || !got.UpdatedAt.Equal(paused) {
			t.Errorf("paused schedule: Paused %v, UpdatedAt %v; want paused at %v", got.Paused, got.UpdatedAt, paused)
		}
		f.tick(time.Minute)
	}
	sc.Cron = "@daily"
	if res := f.putSchedule(sc); !res.Updated || !res.Schedule.Paused {
		t.Errorf("PutSchedule on a paused schedule: Updated %v, Paused %v; want updated and still paused", res.Updated, res.Schedule.Paused)
	}
	resumed := f.tick(time.Minute)
	got, err := f.s.PauseSchedule(f.ctx, "reports", "hourly", false, f.now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Paused || !got.UpdatedAt.Equal(resumed) || got.Cron != "@daily" {
		t.Errorf("resumed schedule = %+v; want running, updated at %v, cron @daily", got, resumed)
	}
	if _, err := f.s.PauseSchedule(f.ctx, "reports", "nope", true, f.now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pausing an unknown schedule = %v, want ErrNotFound", err)
	}
}

// testSchedulePutConcurrently checks that processes creating the same
// schedule at once all succeed, and exactly one creates it.
func testSchedulePutConcurrently(t *testing.T, f *fixture) {
	const callers = 8
	var wg sync.WaitGroup
	results := make([]store.PutScheduleResult, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = f.s.PutSchedule(f.ctx, store.PutSchedule{
				Schedule: store.Schedule{Workflow: "reports", Name: "hourly", Cron: "@hourly", Input: []byte(`{}`), Tenant: "default"},
				Now:      f.now,
			})
		}()
	}
	wg.Wait()
	created := 0
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if results[i].Created {
			created++
		}
		if results[i].Updated {
			t.Errorf("caller %d updated a schedule with the same settings", i)
		}
	}
	if created != 1 {
		t.Errorf("%d callers created the schedule, want 1", created)
	}
}
