package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

func TestPurgeFilterValidate(t *testing.T) {
	tests := []struct {
		f    runtime.PurgeFilter
		want string // "" when valid
	}{
		{runtime.PurgeFilter{}, ""},
		{runtime.PurgeFilter{Statuses: runtime.FinishedStatuses(), OlderThan: time.Hour}, ""},
		{runtime.PurgeFilter{Statuses: []runtime.RunStatus{runtime.RunRunning}}, "status RUNNING: only finished runs are purged: use COMPLETED, FAILED, CANCELLED"},
		{runtime.PurgeFilter{Statuses: []runtime.RunStatus{"done"}}, `unknown run status "done": use COMPLETED, FAILED, CANCELLED`},
		{runtime.PurgeFilter{OlderThan: -time.Hour}, "older than -1h0m0s: give a positive age"},
	}
	for _, tt := range tests {
		err := tt.f.Validate()
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.f, err, tt.want)
		}
	}
}

// TestPurgeRuns purges by the engine's retention, by tenant, and by an
// age and statuses of the caller's, counting first with DryRun.
func TestPurgeRuns(t *testing.T) {
	ctx := t.Context()
	h := trellistest.New(t, trellistest.WithConfig(func(c *runtime.Config) {
		c.Retention.Cancelled = runtime.KeepForever
	}))
	client, err := wf.RegisterChain(h.Engine, failingChain{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(start int64, opts ...runtime.RunOption) runtime.RunID {
		t.Helper()
		res, _ := client.Run(ctx, wf.ChainInput{Start: start}, opts...)
		return res.ID
	}
	done, failed := run(1), run(-1)
	ref, err := client.RunNoWait(ctx, wf.ChainInput{Start: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Engine.CancelRun(ctx, ref.ID); err != nil {
		t.Fatal(err)
	}
	acme := run(2, runtime.WithTenant("acme"))
	h.Clock.Advance(8 * 24 * time.Hour)
	recent := run(3)

	// By the engine's retention: the completed runs more than 7 days old;
	// failed runs are kept 30 days, cancelled ones forever.
	dry, err := h.Engine.PurgeRuns(ctx, runtime.PurgeFilter{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) *time.Time { t := h.Now().Add(-d).UTC(); return &t }
	want := &runtime.PurgeResult{DryRun: true, Now: h.Now().UTC(), Runs: 2, Statuses: []runtime.PurgeCount{
		{Status: runtime.RunCompleted, FinishedBefore: at(7 * 24 * time.Hour), Runs: 2},
		{Status: runtime.RunFailed, FinishedBefore: at(30 * 24 * time.Hour)},
		{Status: runtime.RunCancelled, KeptForever: true},
	}}
	if diff := cmp.Diff(want, dry); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}
	for _, id := range []runtime.RunID{done, acme} {
		if _, err := h.Engine.Result(ctx, id); err != nil {
			t.Errorf("a dry run deleted run %s: %v", id, err)
		}
	}

	// A tenant's runs, then an age and statuses of the caller's.
	res, err := h.Engine.PurgeRuns(ctx, runtime.PurgeFilter{Tenant: "acme"})
	if err != nil || res.Runs != 1 {
		t.Fatalf("PurgeRuns(tenant acme) = %+v, %v; want its one old run", res, err)
	}
	res, err = h.Engine.PurgeRuns(ctx, runtime.PurgeFilter{Statuses: []runtime.RunStatus{runtime.RunFailed, runtime.RunCancelled}, OlderThan: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Statuses {
		got = append(got, fmt.Sprintf("%s %d", c.Status, c.Runs))
	}
	if diff := cmp.Diff([]string{"FAILED 1", "CANCELLED 1"}, got); diff != "" || res.Runs != 2 {
		t.Errorf("PurgeRuns(failed, cancelled, older than 24h) (-want +got):\n%s", diff)
	}
	for id, kept := range map[runtime.RunID]bool{done: true, failed: false, ref.ID: false, acme: false, recent: true} {
		if _, err := h.Engine.Result(ctx, id); (err == nil) != kept {
			t.Errorf("run %s: Result = %v, want kept %v", id, err, kept)
		}
	}
	if _, err := h.Engine.PurgeRuns(ctx, runtime.PurgeFilter{Statuses: []runtime.RunStatus{"RUNNING"}}); err == nil {
		t.Error("PurgeRuns(RUNNING) accepted")
	}
}

// Delete the runs that completed more than a day ago, after counting them.
func ExampleEngine_PurgeRuns() {
	engine, _ := runtime.New(runtime.Config{Store: memstore.New(), Clock: clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))})
	client, _ := wf.RegisterChain(engine, failingChain{})
	_, _ = runtime.NewDriver(engine)
	for _, start := range []int64{1, 2, -1} {
		_, _ = client.Run(context.Background(), wf.ChainInput{Start: start})
	}
	engine.Clock().(*clock.Virtual).Advance(48 * time.Hour)

	filter := runtime.PurgeFilter{Statuses: []runtime.RunStatus{runtime.RunCompleted}, OlderThan: 24 * time.Hour, DryRun: true}
	counted, _ := engine.PurgeRuns(context.Background(), filter)
	fmt.Println("would delete", counted.Runs)
	filter.DryRun, filter.Now = false, counted.Now // what was counted, no more
	deleted, _ := engine.PurgeRuns(context.Background(), filter)
	fmt.Println("deleted", deleted.Runs)
	// Output:
	// would delete 2
	// deleted 2
}

// failingChain fails at its second step when the input's start is
// negative.
type failingChain struct{}

func (failingChain) First(_ context.Context, in wf.ChainInput) (wf.ChainFirstOutput, error) {
	return wf.ChainFirstOutput{Value: in.Start + 1}, nil
}

func (failingChain) Second(_ context.Context, in wf.ChainInput, p wf.ChainSecondParents) (wf.ChainSecondOutput, error) {
	if in.Start < 0 {
		return wf.ChainSecondOutput{}, runtime.NonRetryable(errors.New("negative start"))
	}
	return wf.ChainSecondOutput{Value: p.First.Value + 1}, nil
}

func (failingChain) Third(_ context.Context, _ wf.ChainInput, p wf.ChainThirdParents) (wf.ChainThirdOutput, error) {
	return wf.ChainThirdOutput{Value: p.Second.Value + 1}, nil
}
