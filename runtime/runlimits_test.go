package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// Run concurrency limits (runConcurrency) through generated clients, on
// a virtual clock, on both stores: testdata/acceptance/deploys.yaml
// (queue), previews.yaml (cancelInProgress) and backups.yaml
// (cancelNewest). Each run sleeps a minute between its two code steps,
// so that it stays in progress while the test triggers others.

func TestRunConcurrencyMemory(t *testing.T) {
	runRunLimits(t, memoryHarness)
}

func TestRunConcurrencyPostgres(t *testing.T) {
	runRunLimits(t, postgresHarness)
}

func runRunLimits(t *testing.T, newH newHarness) {
	t.Run("QueueOneRunOfAKeyAtATimeInOrder", func(t *testing.T) { testRunLimitQueue(t, newH) })
	t.Run("QueueIsFairAcrossKeys", func(t *testing.T) { testRunLimitFair(t, newH) })
	t.Run("CancelInProgress", func(t *testing.T) { testRunLimitCancelInProgress(t, newH) })
	t.Run("CancelNewest", func(t *testing.T) { testRunLimitCancelNewest(t, newH) })
	t.Run("NotDelayed", func(t *testing.T) { testRunLimitNotDelayed(t, newH) })
}

// testRunLimitNotDelayed: a delayed start of a run with a run limit is
// refused, not left to hold a slot before it starts.
func testRunLimitNotDelayed(t *testing.T, newH newHarness) {
	h := newH(t)
	client, err := wf.RegisterDeploys(h.Engine, &deploySteps{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.RunNoWait(t.Context(), wf.DeploysInput{Service: "api"}, runtime.WithStartAfter(time.Hour))
	if err == nil || !strings.Contains(err.Error(), "cannot be delayed yet") {
		t.Errorf("a delayed run with a run limit: %v, want it refused", err)
	}
}

// TestRunConcurrencyGauge: trellis.run.waiting counts the runs waiting
// for a slot or for their debounce window, per workflow, and reads 0
// once they stopped waiting.
func TestRunConcurrencyGauge(t *testing.T) {
	for name, opts := range map[string][]trellistest.Option{
		"Memory":   nil,
		"Postgres": {trellistest.WithStore(pgstore.New(pgtest.Pool(t)))},
	} {
		t.Run(name, func(t *testing.T) {
			tel := newTelemetry(t)
			h := trellistest.New(t, append(opts, trellistest.WithConfig(tel.configure))...)
			client, err := wf.RegisterDeploys(h.Engine, &deploySteps{})
			if err != nil {
				t.Fatal(err)
			}
			for v := range 3 {
				if _, err := client.RunNoWait(t.Context(), wf.DeploysInput{Service: "api", Version: int64(v)}); err != nil {
					t.Fatal(err)
				}
			}
			if got := tel.metrics(t).sum(t, "trellis.run.waiting", "trellis.workflow.name=deploys"); got != 2 {
				t.Errorf("runs waiting = %d, want 2", got)
			}
			// A debounced run waits for its window: it counts too.
			reindex, err := wf.RegisterReindex(h.Engine, &reindexSteps{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reindex.RunNoWait(t.Context(), wf.ReindexInput{Index: "products"}); err != nil {
				t.Fatal(err)
			}
			if got := tel.metrics(t).sum(t, "trellis.run.waiting", "trellis.workflow.name=reindex"); got != 1 {
				t.Errorf("debounced runs waiting = %d, want 1", got)
			}
			h.Settle()
			if got := tel.metrics(t).sum(t, "trellis.run.waiting", "trellis.workflow.name=deploys"); got != 0 {
				t.Errorf("runs waiting once all ended = %d, want 0", got)
			}
			if got := tel.metrics(t).sum(t, "trellis.run.waiting", "trellis.workflow.name=reindex"); got != 0 {
				t.Errorf("debounced runs waiting once all ended = %d, want 0", got)
			}
		})
	}
}

// deploySteps records "<step> <service> <version>".
type deploySteps struct{ calls calls }

func (s *deploySteps) Build(_ context.Context, in wf.DeploysInput) error {
	s.calls.add(fmt.Sprintf("build %s %d", in.Service, in.Version))
	return nil
}

func (s *deploySteps) Promote(_ context.Context, in wf.DeploysInput, _ wf.DeploysPromoteParents) error {
	s.calls.add(fmt.Sprintf("promote %s %d", in.Service, in.Version))
	return nil
}

func testRunLimitQueue(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &deploySteps{}
	client, err := wf.RegisterDeploys(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	deploy := func(service string, version int64) runtime.RunID {
		t.Helper()
		ref, err := client.RunNoWait(t.Context(), wf.DeploysInput{Service: service, Version: version})
		if err != nil {
			t.Fatal(err)
		}
		return ref.ID
	}
	api1, api2, api3 := deploy("api", 1), deploy("api", 2), deploy("api", 3)
	web1 := deploy("web", 1)
	h.RunUntilIdle()
	if diff := cmp.Diff([]string{"build api 1", "build web 1"}, slices.Sorted(slices.Values(steps.calls.list()))); diff != "" {
		t.Fatalf("steps that ran (-want +got):\n%s", diff)
	}
	for _, id := range []runtime.RunID{api2, api3} {
		if r := h.Result(id); r.Status != runtime.RunRunning || !r.Waiting || r.Steps["build"] != runtime.TaskQueued {
			t.Errorf("run %s: %s, waiting %v, build %s; want RUNNING, waiting, build QUEUED", id, r.Status, r.Waiting, r.Steps["build"])
		}
	}
	if r := h.Result(api1); r.Waiting {
		t.Errorf("the run holding the slot says it waits")
	}
	// The first run holds its key through its sleep; when it ends, the
	// second starts, not the third.
	h.Advance(time.Minute)
	if r := h.Result(api1); r.Status != runtime.RunCompleted {
		t.Fatalf("api 1 is %s", r.Status)
	}
	if r := h.Result(api2); r.Waiting || r.Steps["build"] != runtime.TaskCompleted {
		t.Errorf("api 2 after api 1 ended: waiting %v, build %s", r.Waiting, r.Steps["build"])
	}
	if r := h.Result(api3); !r.Waiting {
		t.Errorf("api 3 no longer waits while api 2 runs")
	}
	h.Settle()
	for _, id := range []runtime.RunID{api1, api2, api3, web1} {
		if r := h.Result(id); r.Status != runtime.RunCompleted {
			t.Errorf("run %s ended %s", id, r.Status)
		}
	}
	var apis []string
	for _, c := range steps.calls.list() {
		if strings.Contains(c, " api ") {
			apis = append(apis, c)
		}
	}
	want := []string{"build api 1", "promote api 1", "build api 2", "promote api 2", "build api 3", "promote api 3"}
	if diff := cmp.Diff(want, apis); diff != "" {
		t.Errorf("api deploys ran out of turn (-want +got):\n%s", diff)
	}
}

// testRunLimitFair: a hundred runs of one key waiting hold up no run of
// another key.
func testRunLimitFair(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &deploySteps{}
	client, err := wf.RegisterDeploys(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	hot := make([]wf.DeploysInput, 100)
	for i := range hot {
		hot[i] = wf.DeploysInput{Service: "hot", Version: int64(i)}
	}
	if _, err := client.RunManyNoWait(t.Context(), hot); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"a", "b", "c"} {
		if _, err := client.RunNoWait(t.Context(), wf.DeploysInput{Service: svc, Version: 1}); err != nil {
			t.Fatal(err)
		}
	}
	h.RunUntilIdle()
	want := []string{"build a 1", "build b 1", "build c 1", "build hot 0"}
	if diff := cmp.Diff(want, slices.Sorted(slices.Values(steps.calls.list()))); diff != "" {
		t.Fatalf("steps that ran (-want +got):\n%s", diff)
	}
}

type previewSteps struct{ calls calls }

func (s *previewSteps) Build(_ context.Context, in wf.PreviewsInput) error {
	s.calls.add("build " + in.Commit)
	return nil
}

func (s *previewSteps) Publish(_ context.Context, in wf.PreviewsInput, _ wf.PreviewsPublishParents) error {
	s.calls.add("publish " + in.Commit)
	return nil
}

func testRunLimitCancelInProgress(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &previewSteps{}
	client, err := wf.RegisterPreviews(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	push := func(branch, commit string) runtime.RunID {
		t.Helper()
		ref, err := client.RunNoWait(t.Context(), wf.PreviewsInput{Branch: branch, Commit: commit})
		if err != nil {
			t.Fatal(err)
		}
		return ref.ID
	}
	first := push("main", "a1")
	other := push("feature", "f1")
	h.RunUntilIdle()
	second := push("main", "a2")
	h.RunUntilIdle()
	if r := h.Result(first); r.Status != runtime.RunCancelled {
		t.Fatalf("the older run of main is %s, want CANCELLED", r.Status)
	}
	want := "cancelled by a newer run " + second.String() + " of key previews@runs:main"
	if got := cancelDetails(h, first); !slices.Contains(got, want) {
		t.Errorf("the older run's CANCELLED events say %q, want %q", got, want)
	}
	h.Settle()
	if r := h.Result(second); r.Status != runtime.RunCompleted {
		t.Errorf("the newer run ended %s", r.Status)
	}
	if r := h.Result(other); r.Status != runtime.RunCompleted {
		t.Errorf("the run of another branch ended %s", r.Status)
	}
	if diff := cmp.Diff([]string{"build a1", "build a2", "build f1", "publish a2", "publish f1"}, slices.Sorted(slices.Values(steps.calls.list()))); diff != "" {
		t.Errorf("steps that ran (-want +got):\n%s", diff)
	}
}

type backupSteps struct{ calls calls }

func (s *backupSteps) Dump(_ context.Context, in wf.BackupsInput) error {
	s.calls.add("dump " + in.Database)
	return nil
}

func (s *backupSteps) Upload(_ context.Context, in wf.BackupsInput, _ wf.BackupsUploadParents) error {
	s.calls.add("upload " + in.Database)
	return nil
}

func testRunLimitCancelNewest(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &backupSteps{}
	client, err := wf.RegisterBackups(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	first, err := client.RunNoWait(t.Context(), wf.BackupsInput{Database: "db1"})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	// The newer run is created, and cancelled at once: a record of the
	// trigger, with the reason.
	second, err := client.RunNoWait(t.Context(), wf.BackupsInput{Database: "db1"})
	if err != nil {
		t.Fatal(err)
	}
	if r := h.Result(second.ID); r.Status != runtime.RunCancelled {
		t.Fatalf("the newer run is %s, want CANCELLED", r.Status)
	}
	want := "cancelled: key backups@runs:db1 has 1 runs in progress, its max (the newest: " + first.ID.String() + ")"
	if got := cancelDetails(h, second.ID); !slices.Contains(got, want) {
		t.Errorf("the newer run's CANCELLED events say %q, want %q", got, want)
	}
	h.Settle()
	if r := h.Result(first.ID); r.Status != runtime.RunCompleted {
		t.Errorf("the run in progress ended %s", r.Status)
	}
	// Once it ended, a new run starts.
	third, err := client.RunNoWait(t.Context(), wf.BackupsInput{Database: "db1"})
	if err != nil {
		t.Fatal(err)
	}
	h.Settle()
	if r := h.Result(third.ID); r.Status != runtime.RunCompleted {
		t.Errorf("a run after the first ended %s", r.Status)
	}
	if diff := cmp.Diff([]string{"dump db1", "dump db1", "upload db1", "upload db1"}, slices.Sorted(slices.Values(steps.calls.list()))); diff != "" {
		t.Errorf("steps that ran (-want +got):\n%s", diff)
	}
}

func cancelDetails(h *trellistest.Harness, id runtime.RunID) []string {
	var out []string
	for _, e := range h.Events(id) {
		if e.Type == runtime.EventCancelled {
			out = append(out, e.Detail)
		}
	}
	return out
}
