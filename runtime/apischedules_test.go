package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

func TestAPISchedulesMemory(t *testing.T) {
	testAPISchedules(t, memoryHarness)
}

func TestAPISchedulesPostgres(t *testing.T) {
	testAPISchedules(t, postgresHarness)
}

// scheduleRuns lists the runs of reports a schedule named name started,
// as "tenant tick" (the tick in UTC, hh:mm), oldest first.
func scheduleRuns(t *testing.T, s store.Store, name string) []string {
	t.Helper()
	runs, err := s.ListRuns(t.Context(), store.RunQuery{Workflow: "reports", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	prefix := "trellis:schedule:" + name + ":"
	out := []string{}
	for i := len(runs) - 1; i >= 0; i-- {
		if tick, ok := strings.CutPrefix(runs[i].IdempotencyKey, prefix); ok {
			at, err := time.Parse(time.RFC3339, tick)
			if err != nil {
				t.Fatalf("run %s: key %s: %v", runs[i].ID, runs[i].IdempotencyKey, err)
			}
			out = append(out, runs[i].Tenant+" "+at.Format("15:04"))
		}
	}
	return out
}

// at moves the harness's clock to hh:mm UTC of the day after the one it
// shows, so that every test starts from the same wall time.
func at(h *trellistest.Harness, hh, mm int) {
	day := h.Now().Truncate(24 * time.Hour).Add(24 * time.Hour)
	h.Clock.Set(day.Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute))
}

func testAPISchedules(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &reportSteps{}
	reports, err := wf.RegisterReports(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	at(h, 5, 5)
	h.RunUntilIdle() // the 05:00 tick of the file's hourly schedule

	// Created at 05:05: its first tick is 05:10, although 05:00 is within
	// ScheduleLate.
	created, err := reports.CreateSchedule(ctx, "ten", "*/10 * * * *", wf.ReportsInput{Kind: wf.ReportsInputKindDigest}, runtime.WithScheduleTenant("ops"))
	if err != nil {
		t.Fatal(err)
	}
	if created.Cron != "*/10 * * * *" || created.Tenant != "ops" || created.Timezone != "" || created.Paused || !created.CreatedAt.Equal(h.Now()) {
		t.Errorf("created schedule = %+v", created)
	}
	h.RunUntilIdle()
	if got := scheduleRuns(t, h.Store, "ten"); len(got) != 0 {
		t.Errorf("right after creation, runs %v; want none (no tick since)", got)
	}
	h.Advance(30 * time.Minute) // to 05:35
	want := []string{"ops 05:10", "ops 05:20", "ops 05:30"}
	if diff := cmp.Diff(want, scheduleRuns(t, h.Store, "ten")); diff != "" {
		t.Errorf("runs of ten (-want +got):\n%s", diff)
	}
	if got := steps.calls.count("digest"); got != 3 {
		t.Errorf("build ran for %d digests, want 3", got)
	}

	// The same settings again change nothing.
	again, err := reports.CreateSchedule(ctx, "ten", "*/10 * * * *", wf.ReportsInput{Kind: wf.ReportsInputKindDigest}, runtime.WithScheduleTenant("ops"))
	if err != nil {
		t.Fatal(err)
	}
	if !again.UpdatedAt.Equal(created.UpdatedAt) {
		t.Errorf("creating it again moved UpdatedAt from %v to %v", created.UpdatedAt, again.UpdatedAt)
	}
	// Other settings update it: every quarter hour in another zone.
	h.Advance(2 * time.Minute) // 05:37
	updated, err := reports.CreateSchedule(ctx, "ten", "*/15 * * * *", wf.ReportsInput{Kind: wf.ReportsInputKindHourly}, runtime.WithTimezone("Asia/Kolkata"))
	if err != nil {
		t.Fatal(err)
	}
	if updated.Cron != "*/15 * * * *" || updated.Timezone != "Asia/Kolkata" || updated.Tenant != runtime.DefaultTenant ||
		!updated.CreatedAt.Equal(created.CreatedAt) || !updated.UpdatedAt.Equal(h.Now()) {
		t.Errorf("updated schedule = %+v", updated)
	}
	// Kolkata is UTC+05:30: its quarter hours are UTC's.
	h.Advance(30 * time.Minute) // 06:07
	want = append(want, "default 05:45", "default 06:00")
	if diff := cmp.Diff(want, scheduleRuns(t, h.Store, "ten")); diff != "" {
		t.Errorf("runs of ten after the update (-want +got):\n%s", diff)
	}

	// Paused, it starts nothing; resumed, it goes on from then.
	if s, err := reports.PauseSchedule(ctx, "ten"); err != nil || !s.Paused {
		t.Fatalf("PauseSchedule = %+v, %v", s, err)
	}
	h.Advance(40 * time.Minute) // 06:47
	if diff := cmp.Diff(want, scheduleRuns(t, h.Store, "ten")); diff != "" {
		t.Errorf("runs of ten while paused (-want +got):\n%s", diff)
	}
	if s, err := reports.ResumeSchedule(ctx, "ten"); err != nil || s.Paused {
		t.Fatalf("ResumeSchedule = %+v, %v", s, err)
	}
	h.Advance(20 * time.Minute) // 07:07
	want = append(want, "default 07:00")
	if diff := cmp.Diff(want, scheduleRuns(t, h.Store, "ten")); diff != "" {
		t.Errorf("runs of ten after resuming (-want +got):\n%s", diff)
	}

	listed, err := reports.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Name != "ten" || listed[0].Workflow != "reports" || string(compact(t, listed[0].Input)) != `{"kind":"hourly"}` {
		t.Errorf("Schedules = %+v", listed)
	}

	// Deleted, it starts nothing more; the runs it started stay.
	if err := reports.DeleteSchedule(ctx, "ten"); err != nil {
		t.Fatal(err)
	}
	h.Advance(time.Hour)
	if diff := cmp.Diff(want, scheduleRuns(t, h.Store, "ten")); diff != "" {
		t.Errorf("runs of ten after deleting it (-want +got):\n%s", diff)
	}
	if err := reports.DeleteSchedule(ctx, "ten"); !errors.Is(err, runtime.ErrScheduleNotFound) {
		t.Errorf("deleting it again = %v, want ErrScheduleNotFound", err)
	}
	if _, err := reports.PauseSchedule(ctx, "ten"); !errors.Is(err, runtime.ErrScheduleNotFound) {
		t.Errorf("pausing a deleted schedule = %v, want ErrScheduleNotFound", err)
	}
	// The file's schedule went on all along, one run per hour.
	if diff := cmp.Diff([]string{"default 05:00", "default 06:00", "default 07:00", "default 08:00"}, scheduleRuns(t, h.Store, "hourly")); diff != "" {
		t.Errorf("runs of the file's hourly schedule (-want +got):\n%s", diff)
	}
}

// compact returns raw JSON without spaces (Postgres returns a JSON
// value as it was given; compacting makes both stores' comparable).
func compact(t *testing.T, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCreateScheduleRefusesBadSchedules checks that every problem of a
// schedule is named at once, and that nothing is written.
func TestCreateScheduleRefusesBadSchedules(t *testing.T) {
	h := trellistest.New(t)
	reports, err := wf.RegisterReports(h.Engine, &reportSteps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	tests := []struct {
		name, schedule, cron string
		kind                 wf.ReportsInputKind
		opts                 []runtime.ScheduleOption
		want                 []string
		input                bool // the input is among the problems
	}{
		{
			name: "everything", schedule: "weekly", cron: "0 3 * *", kind: "weekly",
			opts: []runtime.ScheduleOption{runtime.WithTimezone("Mars/Olympus")},
			want: []string{
				"schedule weekly of workflow reports: ",
				`time zone "Mars/Olympus"`,
				"input.kind",
			},
			input: true,
		},
		{name: "cron", schedule: "weekly", cron: "0 3 * *", kind: "hourly", want: []string{`cron expression "0 3 * *"`}},
		{name: "clash with the file", schedule: "hourly", cron: "@hourly", kind: "hourly", want: []string{"schedule hourly of workflow reports: the workflow file declares a schedule of that name"}},
		{name: "bad name", schedule: "Weekly Digest", cron: "@weekly", kind: "digest", want: []string{`schedule Weekly Digest of workflow reports: name "Weekly Digest"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := reports.CreateSchedule(ctx, tt.schedule, tt.cron, wf.ReportsInput{Kind: tt.kind}, tt.opts...)
			var se *runtime.ScheduleError
			if !errors.As(err, &se) || !errors.Is(err, runtime.ErrInvalidSchedule) {
				t.Fatalf("CreateSchedule = %v, want a *ScheduleError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if got := errors.Is(err, runtime.ErrInvalidInput); got != tt.input {
				t.Errorf("errors.Is(err, ErrInvalidInput) = %v, want %v", got, tt.input)
			}
		})
	}
	if got, err := reports.Schedules(ctx); err != nil || len(got) != 0 {
		t.Errorf("Schedules after refused creations = %+v, %v; want none", got, err)
	}
}

// TestAPIScheduleCreatedByAnotherEngine checks that an engine fires a
// schedule another engine (here, one that only triggers) created, once
// ScheduleRefresh has passed on its clock.
func TestAPIScheduleCreatedByAnotherEngine(t *testing.T) {
	h := trellistest.New(t)
	if _, err := wf.RegisterReports(h.Engine, &reportSteps{}); err != nil {
		t.Fatal(err)
	}
	at(h, 5, 0)
	start := h.Now().Add(30 * time.Second)
	h.Clock.Set(start)
	h.RunUntilIdle()
	other, err := runtime.New(runtime.Config{Store: h.Store, Clock: h.Clock})
	if err != nil {
		t.Fatal(err)
	}
	client, err := wf.NewReportsClient(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateSchedule(t.Context(), "minutely", "* * * * *", wf.ReportsInput{Kind: wf.ReportsInputKindHourly}); err != nil {
		t.Fatal(err)
	}
	// Within ScheduleRefresh (10s) the harness's engine has not read it.
	h.Clock.Set(start.Add(5 * time.Second))
	h.RunUntilIdle()
	if got := scheduleRuns(t, h.Store, "minutely"); len(got) != 0 {
		t.Errorf("before the refresh, runs %v", got)
	}
	// It reads it at 05:02:30 and fires the latest tick; then each.
	h.Advance(2 * time.Minute)
	h.Advance(2 * time.Minute)
	if diff := cmp.Diff([]string{"default 05:02", "default 05:03", "default 05:04"}, scheduleRuns(t, h.Store, "minutely")); diff != "" {
		t.Errorf("runs of minutely (-want +got):\n%s", diff)
	}
}

// TestAPIScheduleOnAStartedEngine checks that a started engine fires a
// schedule created after it started.
func TestAPIScheduleOnAStartedEngine(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 10, 20, 30, 0, time.UTC)
	vc := clock.NewVirtual(t0)
	s := memstore.New()
	engine, err := runtime.New(runtime.Config{Store: s, Clock: vc})
	if err != nil {
		t.Fatal(err)
	}
	reports, err := wf.RegisterReports(engine, &reportSteps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := engine.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	if _, err := reports.CreateSchedule(t.Context(), "minutely", "* * * * *", wf.ReportsInput{Kind: wf.ReportsInputKindDigest}); err != nil {
		t.Fatal(err)
	}
	for minute := 1; minute <= 3; minute++ {
		vc.Set(t0.Add(time.Duration(minute) * time.Minute))
		deadline := time.Now().Add(10 * time.Second)
		for len(scheduleRuns(t, s, "minutely")) < minute {
			if time.Now().After(deadline) {
				t.Fatalf("at %v, runs %v", vc.Now(), scheduleRuns(t, s, "minutely"))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if diff := cmp.Diff([]string{"default 10:21", "default 10:22", "default 10:23"}, scheduleRuns(t, s, "minutely")); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

// TestScheduleTicks checks that @every ticks at whole multiples of its
// interval (the same ticks for every engine, whenever it asks), and that
// an engine that has been firing a schedule catches up on the ticks it
// missed within ScheduleLate when it wakes late.
func TestScheduleTicks(t *testing.T) {
	h := trellistest.New(t)
	reports, err := wf.RegisterReports(h.Engine, &reportSteps{})
	if err != nil {
		t.Fatal(err)
	}
	at(h, 5, 5)
	if _, err := reports.CreateSchedule(t.Context(), "every", "@every 20m", wf.ReportsInput{Kind: wf.ReportsInputKindHourly}); err != nil {
		t.Fatal(err)
	}
	h.Advance(time.Hour) // to 06:05
	want := []string{"default 05:20", "default 05:40", "default 06:00"}
	if diff := cmp.Diff(want, scheduleRuns(t, h.Store, "every")); diff != "" {
		t.Errorf("runs of @every 20m (-want +got):\n%s", diff)
	}
	// The engine wakes 50 minutes late (the clock jumps): it fires the
	// two ticks it missed.
	h.Clock.Set(h.Now().Add(50 * time.Minute))
	h.RunUntilIdle()
	want = append(want, "default 06:20", "default 06:40")
	if diff := cmp.Diff(want, scheduleRuns(t, h.Store, "every")); diff != "" {
		t.Errorf("runs after waking late (-want +got):\n%s", diff)
	}
}
