package runtime_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// The leader deletes finished runs past their retention: real workflows
// run on the test kit, and a started engine sharing its store and its
// virtual clock leads, and purges as the clock passes the retention.

func TestRetentionMemory(t *testing.T) { testRetention(t, memstore.New()) }

func TestRetentionPostgres(t *testing.T) { testRetention(t, pgstore.New(pgtest.Pool(t))) }

// messages returns the captured lines with message msg.
func (c *captured) messages(msg string) []map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]string
	for _, l := range c.lines {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

func testRetention(t *testing.T, s store.Store) {
	ctx := t.Context()
	h := trellistest.New(t, trellistest.WithStore(s))
	chain, err := wf.RegisterChain(h.Engine, &chainSteps{})
	if err != nil {
		t.Fatal(err)
	}
	ops := registerOps(t, h, &opsSteps{})
	tel := newTelemetry(t)
	var logs captured
	leader, err := runtime.New(runtime.Config{
		Store: s, Clock: h.Clock, WorkerID: "leader", Logger: slog.New(&logs), MeterProvider: tel.mp,
		Retention: runtime.Retention{Cancelled: runtime.KeepForever},
	})
	if err != nil {
		t.Fatal(err)
	}
	start(t, leader)
	waitFor(t, "the engine to lead", leader.IsLeader)
	interval := leader.Config().Retention.Interval

	// At 00:00 a run completes, one fails (and its failure handler runs),
	// one is cancelled; six days later another completes.
	old, err := chain.Run(ctx, wf.ChainInput{Start: 1})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := ops.Run(ctx, wf.OpsInput{Mode: wf.OpsInputModeFatal})
	if !errors.Is(err, runtime.ErrRunFailed) || failed.Steps.Alert != runtime.TaskCompleted {
		t.Fatalf("ops run = %v, handler %s; want it failed and handled", err, failed.Steps.Alert)
	}
	ref, err := chain.RunNoWait(ctx, wf.ChainInput{Start: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := h.Engine.CancelRun(ctx, ref.ID); err != nil || !ok {
		t.Fatalf("CancelRun = %v, %v", ok, err)
	}
	cancelled := ref.ID
	h.Advance(6 * 24 * time.Hour)
	recent, err := chain.Run(ctx, wf.ChainInput{Start: 3})
	if err != nil {
		t.Fatal(err)
	}

	exists := func(id uuid.UUID) bool {
		_, err := h.Engine.Result(ctx, id)
		if err != nil && !errors.Is(err, runtime.ErrRunNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	// passUntil moves the clock an interval at a time, so that the
	// leader's loop purges, until done says so.
	passUntil := func(what string, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !done() {
			if time.Now().After(deadline) {
				t.Fatalf("waited 20s (the clock reads %s) for %s", h.Now().Format(time.RFC3339), what)
			}
			h.Clock.Advance(interval)
			time.Sleep(5 * time.Millisecond)
		}
	}

	// Seven days after they ended, the old completed run goes; the failed
	// run is kept 30 days, the cancelled one forever, the recent one for
	// now.
	h.Clock.Set(h.Start.Add(7 * 24 * time.Hour))
	passUntil("the completed run to go", func() bool { return !exists(old.ID) })
	for name, id := range map[string]uuid.UUID{"failed": failed.ID, "cancelled": cancelled, "recent": recent.ID} {
		if !exists(id) {
			t.Errorf("the %s run was purged %s after the start; want it kept", name, h.Now().Sub(h.Start))
		}
	}
	if _, err := h.Engine.Events(ctx, old.ID); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("Events of the purged run = %v, want ErrRunNotFound", err)
	}
	if err := h.Engine.RetryRun(ctx, old.ID); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("RetryRun of the purged run = %v, want ErrRunNotFound", err)
	}

	// After 30 days the failed run goes, and the recent completed one
	// (24 days old); the cancelled run stays.
	h.Clock.Set(h.Start.Add(30 * 24 * time.Hour))
	passUntil("the failed and the recent runs to go", func() bool { return !exists(failed.ID) && !exists(recent.ID) })
	if !exists(cancelled) {
		t.Error("the cancelled run was purged; its status is kept forever")
	}

	ms := tel.metrics(t)
	if got := ms.sum(t, "trellis.run.purged", "trellis.run.status=completed"); got != 2 {
		t.Errorf("trellis.run.purged{completed} = %d, want 2", got)
	}
	if got := ms.sum(t, "trellis.run.purged", "trellis.run.status=failed"); got != 1 {
		t.Errorf("trellis.run.purged{failed} = %d, want 1", got)
	}
	// The leader logs a pass's summary once the pass is over (after the
	// runs are gone, and after it purged old events): wait for it.
	var summaries []map[string]string
	deleted := 0
	for deadline := time.Now().Add(10 * time.Second); deleted != 3 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		summaries = logs.messages("purged finished runs past their retention")
		deleted = 0
		for _, l := range summaries {
			for _, k := range []string{"completed", "failed", "cancelled"} {
				if l[k] != "" {
					deleted += atoi(t, l[k])
				}
			}
		}
	}
	for _, l := range summaries {
		if l["took"] == "" || l["runs"] == "" {
			t.Errorf("summary line without runs or took: %v", l)
		}
	}
	if deleted != 3 {
		t.Errorf("summary lines count %d runs deleted, want 3: %v", deleted, summaries)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("%q is not a count", s)
		}
		n = 10*n + int(c-'0')
	}
	return n
}

// waitFor polls cond for up to 10s of real time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// failingPurges fails PurgeRuns while failing is set.
type failingPurges struct {
	store.Store
	failing atomic.Bool
	calls   atomic.Int32
}

func (f *failingPurges) PurgeRuns(ctx context.Context, p store.Purge) (store.PurgeResult, error) {
	f.calls.Add(1)
	if f.failing.Load() {
		return store.PurgeResult{}, errors.New("disk on fire")
	}
	return f.Store.PurgeRuns(ctx, p)
}

// A purge that fails is logged once per streak of failures, at Warn, and
// retried every interval; the engine goes on.
func TestRetentionFailuresAreLoggedOnce(t *testing.T) {
	vc := clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &failingPurges{Store: memstore.New()}
	s.failing.Store(true)
	var logs captured
	e, err := runtime.New(runtime.Config{Store: s, Clock: vc, WorkerID: "leader", Logger: slog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	start(t, e)
	waitFor(t, "the engine to lead", e.IsLeader)
	interval := e.Config().Retention.Interval
	for calls := int32(3); s.calls.Load() < calls; {
		vc.Advance(interval)
		time.Sleep(2 * time.Millisecond)
	}
	warned := logs.messages("purging finished runs failed; retrying every interval")
	if len(warned) != 1 || !strings.Contains(warned[0]["error"], "disk on fire") {
		t.Errorf("warnings = %v, want one naming the error", warned)
	}
	s.failing.Store(false)
	waitFor(t, "purging to work again", func() bool {
		vc.Advance(interval)
		return len(logs.messages("purging finished runs works again")) == 1
	})
	if n := len(logs.messages("purging finished runs failed; retrying every interval")); n != 1 {
		t.Errorf("%d warnings over one streak of failures, want 1", n)
	}
}

func TestRetentionConfig(t *testing.T) {
	e, err := runtime.New(runtime.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.Retention{
		Completed: 7 * 24 * time.Hour, Failed: 30 * 24 * time.Hour, Cancelled: 7 * 24 * time.Hour,
		Events: 7 * 24 * time.Hour, BatchSize: 1000, Interval: time.Minute,
	}
	if got := e.Config().Retention; got != want {
		t.Errorf("default retention = %+v, want %+v", got, want)
	}
	e, err = runtime.New(runtime.Config{Store: memstore.New(), Retention: runtime.Retention{Failed: runtime.KeepForever, Completed: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	r := e.Config().Retention
	for st, want := range map[runtime.RunStatus]time.Duration{runtime.RunCompleted: time.Hour, runtime.RunCancelled: 7 * 24 * time.Hour} {
		if age, ok := r.Age(st); !ok || age != want {
			t.Errorf("Age(%s) = %v, %v; want %v", st, age, ok, want)
		}
	}
	if age, ok := r.Age(runtime.RunFailed); ok {
		t.Errorf("Age(FAILED) = %v with KeepForever, want kept forever", age)
	}
	if _, ok := r.Age(runtime.RunRunning); ok {
		t.Error("Age(RUNNING) reports an age")
	}

	bad := []struct {
		r    runtime.Retention
		want string
	}{
		{runtime.Retention{Completed: 30 * time.Second}, "Retention.Completed is 30s: keep runs at least 1m0s"},
		{runtime.Retention{Failed: 7}, "Retention.Failed is 7ns"},
		{runtime.Retention{Cancelled: -24 * time.Hour}, "Retention.Cancelled is -24h0m0s: give a positive age, or runtime.KeepForever"},
		{runtime.Retention{BatchSize: -1}, "Retention.BatchSize is -1"},
		{runtime.Retention{Events: time.Second}, "Retention.Events is 1s: keep events at least 1m0s"},
		{runtime.Retention{Interval: -time.Second}, "Retention.Interval is -1s"},
	}
	for _, tt := range bad {
		if _, err := runtime.New(runtime.Config{Store: memstore.New(), Retention: tt.r}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("runtime.New with %+v = %v, want an error with %q", tt.r, err, tt.want)
		}
	}
}
