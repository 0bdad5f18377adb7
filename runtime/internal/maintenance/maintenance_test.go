package maintenance

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bundle is what a service test needs: a virtual clock, a store and a
// log it can read.
type bundle struct {
	clock *clock.Virtual
	store *countingStore
	logs  *logBuffer
	log   *slog.Logger
}

func setup(t *testing.T) *bundle {
	t.Helper()
	logs := &logBuffer{}
	return &bundle{
		clock: clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)),
		store: &countingStore{Store: memstore.New()},
		logs:  logs,
		log:   slog.New(slog.NewTextHandler(logs, nil)),
	}
}

// advance moves the clock by d once some goroutine sleeps on it.
func (b *bundle) advance(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := b.clock.NextDue(); ok {
			b.clock.Advance(d)
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing waits on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count is how many lines hold s.
func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// countingStore counts the leader's calls, and fails them on demand.
type countingStore struct {
	store.Store
	recovered, maintained atomic.Int32
	failTimers            atomic.Bool
}

func (s *countingStore) RecoverTasks(ctx context.Context, r store.Recover) (store.RecoverResult, error) {
	s.recovered.Add(1)
	return s.Store.RecoverTasks(ctx, r)
}

func (s *countingStore) Maintain(ctx context.Context, now time.Time) error {
	s.maintained.Add(1)
	return errors.New("vacuum refused")
}

func (s *countingStore) NextTimer(ctx context.Context) (time.Time, bool, error) {
	if s.failTimers.Load() {
		return time.Time{}, false, errors.New("connection reset")
	}
	return s.Store.NextTimer(ctx)
}

// fakeService records its starts and stops.
type fakeService struct{ starts, stops atomic.Int32 }

func (f *fakeService) Start(context.Context) error { f.starts.Add(1); return nil }
func (f *fakeService) Stop()                       { f.stops.Add(1) }

// The maintainer runs its services exactly while the engine leads.
func TestMaintainerRunsServicesWhileLeading(t *testing.T) {
	a, b := &fakeService{}, &fakeService{}
	m := NewMaintainer(a, b)
	leading := make(chan bool)
	if err := m.Start(t.Context(), leading); err != nil {
		t.Fatal(err)
	}
	leading <- true
	leading <- true // no change: nothing happens
	leading <- false
	leading <- true
	m.Stop()
	for i, s := range []*fakeService{a, b} {
		if s.starts.Load() != 2 || s.stops.Load() != 2 {
			t.Errorf("service %d: %d starts and %d stops, want 2 of each", i, s.starts.Load(), s.stops.Load())
		}
	}
}

// Dead workers' tasks are recovered only once the leader has led with
// the store answering for StaleAfter: a failure of the store restarts
// that wait.
func TestRecovererWaitsForASteadyStore(t *testing.T) {
	b := setup(t)
	faults := telemetry.NewFaults(b.log)
	health := &StoreHealth{}
	timers := NewTimerFirer(TimerConfig{Interval: time.Second, Store: b.store, Clock: b.clock, Faults: faults, Health: health})
	r := NewRecoverer(RecoveryConfig{StaleAfter: 10 * time.Second, Every: 5 * time.Second, Interval: time.Second,
		Store: b.store, Clock: b.clock, Log: b.log, Faults: faults, Health: health})
	r.TestSignals.Recovered.Init()
	timers.TestSignals.Round.Init()
	m := NewMaintainer(timers, r)
	leading := make(chan bool, 1)
	leading <- true
	if err := m.Start(t.Context(), leading); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	if _, ok := timers.TestSignals.Round.Wait(5 * time.Second); !ok {
		t.Fatal("the timer firer did not run at once")
	}
	for range 9 {
		b.advance(t, time.Second)
	}
	if n := b.store.recovered.Load(); n != 0 {
		t.Fatalf("recovered %d times within StaleAfter of gaining leadership", n)
	}
	// The store fails the timer firer: the wait starts again.
	for ok := true; ok; _, ok = timers.TestSignals.Round.Wait(50 * time.Millisecond) {
	}
	b.store.failTimers.Store(true)
	timers.Nudge()
	if _, ok := timers.TestSignals.Round.Wait(5 * time.Second); !ok {
		t.Fatal("the timer firer did not run when nudged")
	}
	b.store.failTimers.Store(false)
	for range 9 {
		b.advance(t, time.Second)
	}
	if n := b.store.recovered.Load(); n != 0 {
		t.Fatalf("recovered %d times within StaleAfter of a store failure", n)
	}
	for b.store.recovered.Load() == 0 {
		b.advance(t, time.Second)
	}
	if _, ok := r.TestSignals.Recovered.Wait(5 * time.Second); !ok {
		t.Fatal("no recovery signalled")
	}
	if b.logs.count("reading the next timer failed; retrying") != 1 || b.logs.count("reading the next timer works again") != 1 {
		t.Errorf("the outage was not logged once, with its end:\n%s", b.logs.buf.String())
	}
}

// A failing housekeeping is warned about once.
func TestHousekeeperWarnsOnce(t *testing.T) {
	b := setup(t)
	h := NewHousekeeper(HousekeepingConfig{Store: b.store, Clock: b.clock, Log: b.log})
	h.TestSignals.Round.Init()
	if err := h.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	for range 3 {
		b.advance(t, 5*time.Second)
		if err, ok := h.TestSignals.Round.Wait(5 * time.Second); !ok || err == nil {
			t.Fatalf("round = %v, %v; want the store's error", err, ok)
		}
	}
	if n := b.logs.count("store maintenance failed"); n != 1 {
		t.Errorf("warned %d times, want once", n)
	}
}

// The purger purges each status with its age, then the events, logs a
// summary, and warns once per streak of failures.
func TestPurgerPurgesEachStatusByItsAge(t *testing.T) {
	b := setup(t)
	type call struct {
		status store.RunStatus
		before time.Time
	}
	var mu sync.Mutex
	var calls []call
	var failing atomic.Bool
	p := NewPurger(RetentionConfig{
		Interval: time.Minute,
		Ages:     []StatusAge{{store.RunCompleted, time.Hour}, {store.RunFailed, 2 * time.Hour}},
		PurgeRuns: func(_ context.Context, st store.RunStatus, before time.Time, _ func() bool) (int, error) {
			if failing.Load() {
				return 0, errors.New("disk on fire")
			}
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, call{st, before})
			return 3, nil
		},
		Store: b.store, Clock: b.clock, Log: b.log,
	})
	p.TestSignals.Purged.Init()
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	b.advance(t, time.Minute)
	if err, ok := p.TestSignals.Purged.Wait(5 * time.Second); !ok || err != nil {
		t.Fatalf("purge = %v, %v", err, ok)
	}
	now := b.clock.Now()
	mu.Lock()
	want := []call{{store.RunCompleted, now.Add(-time.Hour)}, {store.RunFailed, now.Add(-2 * time.Hour)}}
	if len(calls) != 2 || calls[0] != want[0] || calls[1] != want[1] {
		t.Errorf("purged %v, want %v", calls, want)
	}
	mu.Unlock()
	if b.logs.count("purged finished runs past their retention") != 1 || b.logs.count("completed=3 failed=3") != 1 {
		t.Errorf("no summary of the purge:\n%s", b.logs.buf.String())
	}
	failing.Store(true)
	for range 2 {
		b.advance(t, time.Minute)
		if err, ok := p.TestSignals.Purged.Wait(5 * time.Second); !ok || err == nil {
			t.Fatalf("purge = %v, %v; want the error", err, ok)
		}
	}
	failing.Store(false)
	b.advance(t, time.Minute)
	if err, ok := p.TestSignals.Purged.Wait(5 * time.Second); !ok || err != nil {
		t.Fatalf("purge = %v, %v; want it to work again", err, ok)
	}
	if b.logs.count("purging finished runs failed") != 1 || b.logs.count("purging finished runs works again") != 1 {
		t.Errorf("a streak of failures was not warned about once, with its end:\n%s", b.logs.buf.String())
	}
}

// A run that stays stuck is logged once per StuckAfter.
func TestStuckCheckerRemindsOncePerStuckAfter(t *testing.T) {
	b := setup(t)
	run := uuid.New()
	since := b.clock.Now().Add(-time.Hour)
	s := NewStuckChecker(StuckConfig{
		StuckAfter: 10 * time.Second,
		List: func(context.Context) ([]StuckRun, error) {
			return []StuckRun{{ID: run, Workflow: "orders", Tenant: "acme", Since: since, Tasks: []string{"charge RUNNING"}}}, nil
		},
		Clock: b.clock, Log: b.log, Faults: telemetry.NewFaults(b.log),
	})
	s.TestSignals.Checked.Init()
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	for range 4 { // checks every 5s: at 5s, 10s, 15s and 20s
		b.advance(t, 5*time.Second)
		if n, ok := s.TestSignals.Checked.Wait(5 * time.Second); !ok || n != 1 {
			t.Fatalf("check = %d, %v", n, ok)
		}
	}
	if n := b.logs.count("run making no progress"); n != 2 {
		t.Errorf("logged %d times over 20s, want 2 (at 5s and 15s)", n)
	}
	if b.logs.count("run_id="+run.String()) != 2 || b.logs.count("tasks=\"charge RUNNING\"") != 2 {
		t.Errorf("the lines do not name the run and its tasks:\n%s", b.logs.buf.String())
	}
}

// With a long StuckAfter, the checker looks at its first tick as leader,
// then once a minute (its interval's ceiling), not every tick.
func TestStuckCheckerChecksOncePerInterval(t *testing.T) {
	b := setup(t)
	var checks atomic.Int32
	s := NewStuckChecker(StuckConfig{
		StuckAfter: time.Hour,
		List:       func(context.Context) ([]StuckRun, error) { checks.Add(1); return nil, nil },
		Clock:      b.clock, Log: b.log, Faults: telemetry.NewFaults(b.log),
	})
	s.TestSignals.Checked.Init()
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	b.advance(t, 5*time.Second)
	if _, ok := s.TestSignals.Checked.Wait(5 * time.Second); !ok {
		t.Fatal("no check at the first tick")
	}
	for range 11 { // 55s more: within the minute
		b.advance(t, 5*time.Second)
	}
	b.advance(t, 5*time.Second) // a minute after the first check
	if _, ok := s.TestSignals.Checked.Wait(5 * time.Second); !ok {
		t.Fatal("no check a minute after the first")
	}
	if n := checks.Load(); n != 2 {
		t.Errorf("%d checks over 65s, want 2", n)
	}
}
