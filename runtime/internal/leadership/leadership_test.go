package leadership

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/internal/telemetry"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Of two engines sharing a store, one leads and tells its subscribers;
// when it stops it resigns, and the other takes over at its next try.
func TestOneLeadsAndHandsOverOnStop(t *testing.T) {
	s := memstore.New()
	vc := clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	elector := func(worker string) *Elector {
		e := New(Config{Elector: s.Leadership(worker), Clock: vc, Log: log, Faults: telemetry.NewFaults(log)})
		e.TestSignals.Changed.Init()
		return e
	}
	first, second := elector("first"), elector("second")
	leading := first.Subscribe()
	if err := first.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, ok := first.TestSignals.Changed.Wait(5 * time.Second); !ok || !got {
		t.Fatalf("first engine's change = %v, %v; want it to lead", got, ok)
	}
	if got := <-leading; !got || !first.Leading() {
		t.Fatalf("subscriber told %v, Leading %v; want both true", got, first.Leading())
	}
	if err := second.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	first.Stop()
	if first.Leading() {
		t.Error("a stopped elector still leads")
	}
	if got := <-leading; got {
		t.Error("the subscriber was not told that leadership ended")
	}
	// The second engine tries again after an interval.
	for !second.Leading() {
		waitForTimer(t, vc)
		vc.Advance(time.Second)
		if got, ok := second.TestSignals.Changed.Wait(10 * time.Millisecond); ok && !got {
			t.Fatal("the second engine lost a leadership it never had")
		}
	}
}

// waitForTimer waits until some goroutine sleeps on vc.
func waitForTimer(t *testing.T, vc *clock.Virtual) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := vc.NextDue(); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing waits on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}
