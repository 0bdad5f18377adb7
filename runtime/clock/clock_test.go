package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestVirtualFiresTimersInDueOrderAtTheirDueTime(t *testing.T) {
	v := NewVirtual(start)
	var fired []time.Duration
	record := func() { fired = append(fired, v.Now().Sub(start)) }
	v.AfterFunc(3*time.Hour, record)
	v.AfterFunc(time.Hour, record)
	stopped := v.AfterFunc(2*time.Hour, record)
	if !stopped.Stop() {
		t.Fatal("Stop on a pending timer returned false")
	}
	ch := v.NewTimer(24 * time.Hour)

	v.Advance(90 * time.Minute)
	if len(fired) != 1 || fired[0] != time.Hour {
		t.Fatalf("after 90m fired = %v, want [1h]", fired)
	}
	v.Advance(24 * time.Hour)
	if len(fired) != 2 || fired[1] != 3*time.Hour {
		t.Fatalf("fired = %v, want [1h 3h]", fired)
	}
	select {
	case at := <-ch.C():
		if !at.Equal(start.Add(24 * time.Hour)) {
			t.Errorf("channel timer fired at %v", at)
		}
	default:
		t.Fatal("24h timer did not fire")
	}
	if got := v.Now(); !got.Equal(start.Add(90*time.Minute + 24*time.Hour)) {
		t.Errorf("Now = %v", got)
	}
	if _, ok := v.NextDue(); ok {
		t.Error("timers still pending")
	}
}

func TestWithTimeoutOnVirtualClock(t *testing.T) {
	v := NewVirtual(start)
	ctx, cancel := WithTimeout(context.Background(), v, 30*time.Second)
	defer cancel()
	v.Advance(29 * time.Second)
	if ctx.Err() != nil {
		t.Fatal("context ended before its deadline")
	}
	v.Advance(time.Second)
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) || ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("cause = %v, err = %v; want deadline exceeded", context.Cause(ctx), ctx.Err())
	}
	if d, ok := ctx.Deadline(); !ok || !d.Equal(start.Add(30*time.Second)) {
		t.Errorf("Deadline = %v, %v; want the virtual deadline", d, ok)
	}
}

func TestSleepReturnsWhenClockAdvances(t *testing.T) {
	v := NewVirtual(start)
	done := make(chan error)
	go func() { done <- Sleep(context.Background(), v, time.Minute) }()
	for {
		if _, ok := v.NextDue(); ok {
			break
		}
		time.Sleep(time.Millisecond) // wait for the sleeper to arm its timer
	}
	v.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
