package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// WaitMany rides out a Postgres restart: its reads fail while the server
// is down and are made again once it is back, and it returns the results
// of runs that ended after the restart.
func TestWaitManyAcrossPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a throwaway cluster; skipped in -short mode")
	}
	srv := pgtest.NewServer(t)
	pool, _ := pgtest.PoolWithSchemaAt(t, srv.URL())
	reads := &failingReads{Store: pgstore.New(pool)}
	e, err := runtime.New(runtime.Config{
		Store: reads, WorkerID: "w", Concurrency: 32, PollInterval: 50 * time.Millisecond,
		TimerInterval: 50 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond, StaleAfter: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	spec := &runtime.WorkflowSpec{Name: "hold", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "s"}}}
	w, err := e.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": func(ctx context.Context, _ *runtime.StepRequest) (json.RawMessage, error) {
			select {
			case <-release: // held until Postgres has restarted
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return json.RawMessage(`{"held":true}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := w.TriggerMany(t.Context(), make([]json.RawMessage, 20))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]runtime.RunID, len(refs))
	for i, ref := range refs {
		ids[i] = ref.ID
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Stop(ctx)
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var results []*runtime.RunResult
	done := make(chan error)
	go func() {
		var err error
		results, err = w.WaitMany(ctx, ids)
		done <- err
	}()

	srv.Stop("fast")
	deadline := time.Now().Add(30 * time.Second)
	for reads.failed.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no read of WaitMany failed while Postgres was down")
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv.Start()
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("WaitMany across a restart = %v", err)
	}
	for i, res := range results {
		if res.ID != ids[i] || res.Status != runtime.RunCompleted || string(res.Outputs["s"]) != `{"held":true}` {
			t.Errorf("result %d = %+v", i, res)
		}
	}
}

// failingReads counts the reads of many runs that failed transiently.
type failingReads struct {
	store.Store
	failed atomic.Int32
}

func (f *failingReads) RunStatuses(ctx context.Context, ids []runtime.RunID) (map[runtime.RunID]store.RunStatus, error) {
	st, err := f.Store.RunStatuses(ctx, ids)
	f.count(err)
	return st, err
}

func (f *failingReads) GetRuns(ctx context.Context, ids []runtime.RunID) ([]store.RunWithTasks, error) {
	runs, err := f.Store.GetRuns(ctx, ids)
	f.count(err)
	return runs, err
}

func (f *failingReads) count(err error) {
	if errors.Is(err, store.ErrTransient) {
		f.failed.Add(1)
	}
}
