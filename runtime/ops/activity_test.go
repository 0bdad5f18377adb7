package ops_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

func TestActivity(t *testing.T) {
	h := trellistest.New(t)
	ctx := t.Context()
	client, err := wf.RegisterChain(h.Engine, chain{})
	if err != nil {
		t.Fatal(err)
	}
	admin := ops.New(h.Engine)
	h.Clock.Advance(90 * time.Second) // 00:01:30
	ok, _ := client.Run(ctx, wf.ChainInput{Start: 1})
	h.Clock.Advance(time.Minute)
	bad, _ := client.Run(ctx, wf.ChainInput{Start: -1})
	if ok.Status != runtime.RunCompleted || bad.Status != runtime.RunFailed {
		t.Fatalf("runs ended %s and %s, want COMPLETED and FAILED", ok.Status, bad.Status)
	}

	a, err := admin.Activity(ctx, 5*time.Minute, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Now is 00:02:30: the window is the five whole minutes up to 00:03.
	if want := h.Start.Add(-2 * time.Minute); !a.From.Equal(want) || !a.To.Equal(h.Start.Add(3*time.Minute)) || len(a.Buckets) != 5 {
		t.Fatalf("window %v to %v in %d buckets, want %v to 00:03 in 5", a.From, a.To, len(a.Buckets), want)
	}
	var got []ops.ActivityBucket
	for _, b := range a.Buckets {
		if b.Created+b.Finished() > 0 {
			got = append(got, b)
		}
	}
	want := []ops.ActivityBucket{
		{Start: h.Start.Add(time.Minute), Created: 1, Completed: 1},
		{Start: h.Start.Add(2 * time.Minute), Created: 1, Failed: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("buckets with runs (-want +got):\n%s", diff)
	}
	if tot := a.Totals(); tot.Created != 2 || tot.Finished() != 2 || a.Running != 0 {
		t.Errorf("totals %+v, running %d; want 2 created, 2 finished, none running", tot, a.Running)
	}

	for _, bad := range []struct{ window, bucket time.Duration }{
		{90 * time.Second, time.Minute}, {0, time.Minute}, {time.Minute, 0}, {25 * time.Hour, time.Minute},
	} {
		if _, err := admin.Activity(ctx, bad.window, bad.bucket); err == nil || !strings.Contains(err.Error(), "activity window") {
			t.Errorf("Activity(%v, %v) = %v, want an error about the window", bad.window, bad.bucket, err)
		}
	}

	counts, err := admin.EventCounts(ctx, ok.ID, bad.ID)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := h.Engine.Events(ctx, bad.ID)
	if counts[bad.ID] != len(events) || counts[ok.ID] == 0 {
		t.Errorf("EventCounts = %v, want %d for the failed run", counts, len(events))
	}
}

// TestStuck checks the stuck runs operators see (the engine's StuckRuns,
// which the dashboard shows) and their JSON.
func TestStuck(t *testing.T) {
	h := trellistest.New(t, trellistest.WithConfig(func(c *runtime.Config) { c.StuckAfter = time.Minute }))
	ctx := t.Context()
	client, err := wf.RegisterChain(h.Engine, chain{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(ctx, wf.ChainInput{Start: 1}) // queued; nothing claims it
	if err != nil {
		t.Fatal(err)
	}
	if stuck, err := h.Engine.StuckRuns(ctx); err != nil || len(stuck) != 0 {
		t.Fatalf("StuckRuns at once = %+v, %v; want none", stuck, err)
	}
	queuedAt := h.Now()
	h.Clock.Advance(2 * time.Minute)
	stuck, err := h.Engine.StuckRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []runtime.StuckRun{{ID: ref.ID, Workflow: "chain", Tenant: "default", Tasks: []runtime.StuckTask{{
		Key: store.TaskKey{Run: ref.ID}, Workflow: "chain", Version: client.Workflow().Definition().Version(), Tenant: "default",
		Step: "first", Status: runtime.TaskQueued, Since: queuedAt,
	}}}}
	if diff := cmp.Diff(want, stuck); diff != "" {
		t.Errorf("StuckRuns after two minutes queued (-want +got):\n%s", diff)
	}
	got, err := json.Marshal(stuck)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := fmt.Sprintf(`[{"id":%q,"workflow":"chain","tenant":"default","steps":[{"step":"first","status":"QUEUED","since":%q}]}]`,
		ref.ID.String(), queuedAt.UTC().Format(time.RFC3339Nano))
	if string(got) != wantJSON {
		t.Errorf("StuckRuns as JSON:\n got %s\nwant %s", got, wantJSON)
	}
}

func TestSpec(t *testing.T) {
	h := trellistest.New(t)
	client, err := wf.RegisterChain(h.Engine, chain{})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := client.Run(t.Context(), wf.ChainInput{Start: 1})
	admin := ops.New(h.Engine)
	run, err := admin.GetRun(t.Context(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := admin.Spec(t.Context(), run.Version)
	if err != nil || spec.Name != "chain" || len(spec.Steps) != 3 || spec.Steps[1].Parents[0] != "first" {
		t.Errorf("Spec(%s) = %+v, %v; want chain's three steps", run.Version, spec, err)
	}
	if _, err := admin.Spec(t.Context(), "chain@nope"); !errors.Is(err, ops.ErrVersionNotFound) {
		t.Errorf("Spec(unknown) = %v, want ErrVersionNotFound", err)
	}
}
