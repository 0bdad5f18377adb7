package runtime_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// flowSpec is version 1 (a -> b -> c) or version 2 (a -> b2 -> c) of
// workflow flow: version 2 renamed b.
func flowSpec(version int) *runtime.WorkflowSpec {
	b := "b"
	if version == 2 {
		b = "b2"
	}
	return &runtime.WorkflowSpec{
		Name: "flow", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{{Name: "a"}, {Name: b, Parents: []string{"a"}}, {Name: "c", Parents: []string{b}}},
	}
}

// codeLog records which code ran each step of each run.
type codeLog struct {
	mu  sync.Mutex
	ran map[runtime.RunID][]string // "step:code"
}

func (l *codeLog) handlers(spec *runtime.WorkflowSpec, code string) runtime.Handlers {
	h := runtime.Handlers{Steps: map[string]runtime.StepFunc{}}
	for _, s := range spec.Steps {
		step := s.Name
		h.Steps[step] = func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.ran == nil {
				l.ran = map[runtime.RunID][]string{}
			}
			l.ran[req.Info.RunID] = append(l.ran[req.Info.RunID], step+":"+code)
			return nil, nil
		}
	}
	return h
}

// ranOn checks that every step of each run ran once, on code.
func (l *codeLog) ranOn(t *testing.T, runs []runtime.RunID, code string, steps ...string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var want []string
	for _, s := range steps {
		want = append(want, s+":"+code)
	}
	for _, id := range runs {
		if got := l.ran[id]; !slices.Equal(got, want) {
			t.Errorf("run %s ran %v, want %v", id, got, want)
		}
	}
}

// A worker claims only the tasks of the versions it serves: after a
// deploy that renamed a step, the runs of the former version wait, shown
// as unserved, rather than fail on the new code; a worker that keeps the
// former version (RegisterFormer) finishes them on their own code.
func testDeployWaitsForTheFormerVersion(t *testing.T, s store.Store) {
	ctx := waitCtx(t)
	var log codeLog
	client := newEngine(t, s, "client")
	v1, err := client.Workflow(flowSpec(1))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := client.Workflow(flowSpec(2))
	if err != nil {
		t.Fatal(err)
	}
	trigger := func(w *runtime.Workflow, n int) []runtime.RunID {
		t.Helper()
		var ids []runtime.RunID
		for range n {
			ref, err := w.Trigger(ctx, json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ref.ID)
		}
		return ids
	}
	old := trigger(v1, 5)

	// The new binary: version 2 only.
	next := newEngine(t, s, "next")
	if _, err := next.Register(flowSpec(2), log.handlers(flowSpec(2), "v2")); err != nil {
		t.Fatal(err)
	}
	start(t, next)
	if got := next.ServedVersions(); !slices.Equal(got, []string{v2.Definition().Version()}) {
		t.Errorf("the new engine serves %v, want only %s", got, v2.Definition().Version())
	}
	fresh := trigger(v2, 3)
	for _, id := range fresh {
		if res, err := next.Wait(ctx, id); err != nil || res.Status != runtime.RunCompleted {
			t.Fatalf("run %s of version 2: %+v, %v", id, res, err)
		}
	}
	log.ranOn(t, fresh, "v2", "a", "b2", "c")
	// The runs of version 1, queued before, were left alone.
	for _, id := range old {
		res, err := next.Result(ctx, id)
		if err != nil || res.Status != runtime.RunRunning || res.Steps["a"] != runtime.TaskQueued {
			t.Fatalf("run %s of version 1 after the deploy: %+v, %v; want it running, step a queued", id, res, err)
		}
	}
	unserved, err := next.Unserved(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(unserved) != 1 || unserved[0].Version != v1.Definition().Version() || unserved[0].Queued != 5 ||
		unserved[0].Workflow != "flow" || !strings.Contains(unserved[0].Reason, "no worker serves version "+v1.Definition().Version()) {
		t.Fatalf("Unserved = %+v, want the 5 queued tasks of %s, which no worker serves", unserved, v1.Definition().Version())
	}

	// A worker that keeps version 1 as a former version finishes them.
	keeper := newEngine(t, s, "keeper")
	if _, err := keeper.Register(flowSpec(2), log.handlers(flowSpec(2), "v2")); err != nil {
		t.Fatal(err)
	}
	if err := keeper.RegisterFormer(flowSpec(1), log.handlers(flowSpec(1), "v1")); err != nil {
		t.Fatal(err)
	}
	start(t, keeper)
	for _, id := range old {
		if res, err := keeper.Wait(ctx, id); err != nil || res.Status != runtime.RunCompleted {
			t.Fatalf("run %s of version 1: %+v, %v", id, res, err)
		}
	}
	log.ranOn(t, old, "v1", "a", "b", "c")
	if unserved, err := keeper.Unserved(ctx); err != nil || len(unserved) != 0 {
		t.Errorf("Unserved = %+v, %v; want nothing once the runs ended", unserved, err)
	}
	// Triggers of the keeper start the current version, never the former.
	ref, err := keeper.Workflow(flowSpec(2))
	if err != nil {
		t.Fatal(err)
	}
	if ref.Definition().Version() != v2.Definition().Version() {
		t.Errorf("the keeper's workflow is %s, want the current %s", ref.Definition().Version(), v2.Definition().Version())
	}
}

// RegisterFormer refuses what would make a version's code ambiguous.
func TestRegisterFormerRefusals(t *testing.T) {
	e := newEngine(t, memstore.New(), "w")
	var log codeLog
	if _, err := e.Register(flowSpec(2), log.handlers(flowSpec(2), "v2")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"the current version again", e.RegisterFormer(flowSpec(2), log.handlers(flowSpec(2), "v2")), "registered already"},
		{"a former version without its code", e.RegisterFormer(flowSpec(1), log.handlers(flowSpec(2), "v2")), "no code for step b"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: RegisterFormer = %v, want an error saying %q", tc.name, tc.err, tc.want)
		}
	}
	if err := e.RegisterFormer(flowSpec(1), log.handlers(flowSpec(1), "v1")); err != nil {
		t.Fatal(err)
	}
	if err := e.RegisterFormer(flowSpec(1), log.handlers(flowSpec(1), "v1")); err == nil || !strings.Contains(err.Error(), "registered already") {
		t.Errorf("a former version twice: RegisterFormer = %v", err)
	}
	if _, err := e.Register(flowSpec(1), log.handlers(flowSpec(1), "v1")); err == nil || !strings.Contains(err.Error(), "RegisterFormer") {
		t.Errorf("a second Register of the workflow = %v, want an error pointing at RegisterFormer", err)
	}
	if len(e.ServedVersions()) != 2 {
		t.Errorf("ServedVersions = %v, want both versions", e.ServedVersions())
	}
	start(t, e)
	if err := e.RegisterFormer(flowSpec(1), log.handlers(flowSpec(1), "v1")); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Errorf("RegisterFormer after Start = %v", err)
	}
}

// A worker also serves the stored versions of its workflow that its code
// can run: those that differ from the registered version in nothing runs
// notice (here, a retry policy). A version that renamed a step is not one.
func testServesCompatibleVersions(t *testing.T, s store.Store) {
	ctx := waitCtx(t)
	var log codeLog
	retried := flowSpec(1)
	retried.Steps[0].Retry = runtime.RetryPolicy{MaxRetries: 3, InitialDelay: time.Second, BackoffFactor: 2, MaxDelay: time.Minute}
	client := newEngine(t, s, "client")
	runsOf := func(spec *runtime.WorkflowSpec) ([]runtime.RunID, string) {
		t.Helper()
		w, err := client.Workflow(spec)
		if err != nil {
			t.Fatal(err)
		}
		var ids []runtime.RunID
		for range 3 {
			ref, err := w.Trigger(ctx, json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ref.ID)
		}
		return ids, w.Definition().Version()
	}
	compatible, compatibleVersion := runsOf(retried)
	renamed, renamedVersion := runsOf(flowSpec(2))

	e := newEngine(t, s, "worker")
	w, err := e.Register(flowSpec(1), log.handlers(flowSpec(1), "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if w.Definition().Version() == compatibleVersion {
		t.Fatal("a changed retry policy made no new version")
	}
	start(t, e)
	served := e.ServedVersions()
	if !slices.Contains(served, compatibleVersion) || slices.Contains(served, renamedVersion) {
		t.Errorf("ServedVersions = %v, want %s (a retry policy changed) and not %s (a step renamed)", served, compatibleVersion, renamedVersion)
	}
	for _, id := range compatible {
		if res, err := e.Wait(ctx, id); err != nil || res.Status != runtime.RunCompleted {
			t.Fatalf("run %s of the compatible version: %+v, %v", id, res, err)
		}
	}
	log.ranOn(t, compatible, "v1", "a", "b", "c")
	workers, err := s.ListWorkers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(workers, func(w store.Worker) bool { return w.ID == "worker" })
	if i < 0 || !slices.Equal(workers[i].Versions, served) {
		t.Errorf("workers = %+v, want worker announcing %v", workers, served)
	}
	for _, id := range renamed {
		if res, err := e.Result(ctx, id); err != nil || res.Status != runtime.RunRunning {
			t.Errorf("run %s of the renamed version: %+v, %v; want it waiting", id, res, err)
		}
	}
}

// TestUnservedGauge: trellis.queue.unserved counts the queued tasks of
// each workflow version no live worker serves, and reads 0 once one does.
func TestUnservedGauge(t *testing.T) {
	for name, opts := range map[string][]trellistest.Option{
		"Memory":   nil,
		"Postgres": {trellistest.WithStore(pgstore.New(pgtest.Pool(t)))},
	} {
		t.Run(name, func(t *testing.T) {
			tel := newTelemetry(t)
			h := trellistest.New(t, append(opts, trellistest.WithConfig(tel.configure))...)
			w, err := h.Engine.Workflow(flowSpec(1))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := w.Trigger(t.Context(), json.RawMessage(`{}`)); err != nil {
					t.Fatal(err)
				}
			}
			version := "trellis.workflow.version=" + w.Definition().Version()
			if got := tel.metrics(t).sum(t, "trellis.queue.unserved", "trellis.workflow.name=flow", version); got != 2 {
				t.Errorf("unserved tasks = %d, want 2", got)
			}
			if err := h.Store.AnnounceWorker(t.Context(), "keeper", []string{w.Definition().Version()}, nil, h.Now()); err != nil {
				t.Fatal(err)
			}
			if got := tel.metrics(t).sum(t, "trellis.queue.unserved", "trellis.workflow.name=flow", version); got != 0 {
				t.Errorf("unserved tasks once a live worker serves the version = %d, want 0", got)
			}
		})
	}
}
