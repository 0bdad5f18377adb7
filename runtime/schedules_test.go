package runtime_test

import (
	"context"
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

func TestSchedulesMemory(t *testing.T) {
	testSchedules(t, memoryHarness)
}

func TestSchedulesPostgres(t *testing.T) {
	testSchedules(t, postgresHarness)
}

type reportSteps struct{ calls calls }

func (s *reportSteps) Build(_ context.Context, in wf.ReportsInput) error {
	s.calls.add(string(in.Kind))
	return nil
}

// scheduled lists the runs of reports by tenant and tick, oldest first.
func scheduled(t *testing.T, h *trellistest.Harness) []string {
	t.Helper()
	runs, err := h.Store.ListRuns(t.Context(), store.RunQuery{Workflow: "reports", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(runs))
	for i, r := range runs {
		out[len(runs)-1-i] = r.Tenant + " " + r.IdempotencyKey
	}
	return out
}

func testSchedules(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &reportSteps{}
	if _, err := wf.RegisterReports(h.Engine, steps); err != nil {
		t.Fatal(err)
	}
	// Move to 05:10 UTC (07:10 in Amsterdam in summer, 06:10 in winter),
	// whatever day the harness starts on, then let three hours pass.
	start := h.Now().Truncate(24 * time.Hour).Add(5*time.Hour + 10*time.Minute)
	if start.Before(h.Now()) {
		start = start.Add(24 * time.Hour)
	}
	h.Clock.Set(start)
	h.RunUntilIdle()
	if got := scheduled(t, h); len(got) != 1 {
		// The 05:00 tick is within the hour a late tick still fires.
		t.Fatalf("at 05:10, runs %v, want the 05:00 hourly one", got)
	}
	h.Advance(3 * time.Hour)
	amsterdam, _ := time.LoadLocation("Europe/Amsterdam")
	morning := time.Date(start.Year(), start.Month(), start.Day(), 7, 30, 0, 0, amsterdam).UTC()
	var want []string
	for hour := 5; hour <= 8; hour++ {
		want = append(want, "default trellis:schedule:hourly:"+start.Truncate(24*time.Hour).Add(time.Duration(hour)*time.Hour).Format(time.RFC3339))
		if tick := start.Truncate(24 * time.Hour).Add(time.Duration(hour) * time.Hour); morning.After(tick) && morning.Before(tick.Add(time.Hour)) {
			want = append(want, "newsroom trellis:schedule:morning:"+morning.Format(time.RFC3339))
		}
	}
	if diff := cmp.Diff(want, scheduled(t, h)); diff != "" {
		t.Errorf("scheduled runs (-want +got):\n%s", diff)
	}
	// Firing again starts nothing: each tick starts one run.
	h.RunUntilIdle()
	if got := scheduled(t, h); len(got) != len(want) {
		t.Errorf("after firing again, %d runs, want %d", len(got), len(want))
	}
	for _, r := range mustResults(t, h) {
		if r.Status != runtime.RunCompleted {
			t.Errorf("run %s is %s, want COMPLETED", r.ID, r.Status)
		}
	}
	// Ticks missed by more than ScheduleLate (an hour) are skipped: after
	// five hours with nothing running, only the latest tick fires.
	h.Clock.Set(h.Now().Add(5 * time.Hour))
	before := len(scheduled(t, h))
	h.RunUntilIdle()
	if got := len(scheduled(t, h)) - before; got != 1 {
		t.Errorf("after five hours down, %d hourly runs started, want 1 (the latest tick)", got)
	}
}

func mustResults(t *testing.T, h *trellistest.Harness) []*runtime.RunResult {
	t.Helper()
	runs, err := h.Store.ListRuns(t.Context(), store.RunQuery{Workflow: "reports", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []*runtime.RunResult
	for _, r := range runs {
		out = append(out, h.Result(r.ID))
	}
	return out
}

// TestSchedulesOnAStartedEngine checks that a started engine fires ticks
// as its clock reaches them.
func TestSchedulesOnAStartedEngine(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 10, 59, 30, 0, time.UTC)
	vc := clock.NewVirtual(t0)
	s := memstore.New()
	engine, err := runtime.New(runtime.Config{Store: s, Clock: vc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wf.RegisterReports(engine, &reportSteps{}); err != nil {
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
	keys := func() []string {
		runs, err := s.ListRuns(t.Context(), store.RunQuery{Workflow: "reports", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range runs {
			out = append(out, r.IdempotencyKey)
		}
		return out
	}
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(keys()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("runs %v, want %d", keys(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// At start, the 10:00 tick is less than an hour late: it fires.
	waitFor(1)
	vc.Set(t0.Add(time.Minute))
	waitFor(2)
	want := []string{"trellis:schedule:hourly:2030-01-01T11:00:00Z", "trellis:schedule:hourly:2030-01-01T10:00:00Z"}
	if diff := cmp.Diff(want, keys()); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}
