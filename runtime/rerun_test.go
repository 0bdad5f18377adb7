package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// Rerunning a finished run from a step, end to end, on each store.

func TestRerunMemory(t *testing.T) {
	runRerun(t, memoryHarness)
}

func TestRerunPostgres(t *testing.T) {
	runRerun(t, postgresHarness)
}

func runRerun(t *testing.T, newH newHarness) {
	tests := []struct {
		name string
		fn   func(*testing.T, newHarness)
	}{
		{"CompletedFromAMiddleStep", testRerunCompleted},
		{"FailedFromTheFailedStep", testRerunFailed},
		{"CancelledRun", testRerunCancelled},
		{"RunningRunRefused", testRerunRunning},
		{"UnknownStepRefused", testRerunUnknownStep},
		{"SleepSleepsAgain", testRerunSleep},
		{"MapItemsAndChildRunsStartedAgain", testRerunMapAndChild},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newH) })
	}
}

// shiftSteps is the chain, with second adding shift to its value: a
// rerun sees second's new output in third.
type shiftSteps struct {
	calls calls
	mu    sync.Mutex
	shift int64
}

func (s *shiftSteps) First(_ context.Context, in wf.ChainInput) (wf.ChainFirstOutput, error) {
	s.calls.add("first")
	return wf.ChainFirstOutput{Value: in.Start + 1}, nil
}

func (s *shiftSteps) Second(_ context.Context, _ wf.ChainInput, p wf.ChainSecondParents) (wf.ChainSecondOutput, error) {
	s.calls.add("second")
	s.mu.Lock()
	defer s.mu.Unlock()
	return wf.ChainSecondOutput{Value: p.First.Value + 1 + s.shift}, nil
}

func (s *shiftSteps) Third(_ context.Context, _ wf.ChainInput, p wf.ChainThirdParents) (wf.ChainThirdOutput, error) {
	s.calls.add("third")
	return wf.ChainThirdOutput{Value: p.Second.Value + 1}, nil
}

func testRerunCompleted(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &shiftSteps{}
	client, err := wf.RegisterChain(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	first, err := client.Run(ctx, wf.ChainInput{Start: 10})
	if err != nil || first.Third == nil || first.Third.Value != 13 {
		t.Fatalf("Run = %+v, %v; want third = 13", first, err)
	}
	steps.mu.Lock()
	steps.shift = 100
	steps.mu.Unlock()
	if err := client.Rerun(ctx, first.ID, wf.ChainRefs.Second()); err != nil {
		t.Fatal(err)
	}
	if got := h.Result(first.ID).Status; got != runtime.RunRunning {
		t.Errorf("run after Rerun = %s, want RUNNING", got)
	}
	res, err := client.Wait(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.First == nil || res.First.Value != 11 || res.Second == nil || res.Second.Value != 112 || res.Third == nil || res.Third.Value != 113 {
		t.Errorf("after the rerun: first %+v, second %+v, third %+v; want 11 (kept), 112, 113", res.First, res.Second, res.Third)
	}
	if diff := cmp.Diff([]string{"first", "second", "third", "second", "third"}, steps.calls.list()); diff != "" {
		t.Errorf("steps ran (-want +got):\n%s", diff)
	}
	checkTrail(t, h, res.ID, "first", trail(queued, started, completed))
	for _, step := range []string{"second", "third"} {
		checkTrail(t, h, res.ID, step, trail(queued, started, completed, queued, started, completed))
	}
	// New attempts, in a log whose times never go back; the step rerun
	// from says why it was queued again.
	events := h.Events(res.ID)
	var attempts []int
	for i, ev := range events {
		if i > 0 && ev.At.Before(events[i-1].At) {
			t.Errorf("event %d (%s %s) at %s, before the one before it", i, ev.Step, ev.Type, ev.At)
		}
		if ev.Step == "second" && ev.Type == started {
			attempts = append(attempts, ev.Attempt)
		}
	}
	if diff := cmp.Diff([]int{1, 2}, attempts); diff != "" {
		t.Errorf("second's attempts (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(events, func(ev runtime.Event) bool {
		return ev.Step == "second" && ev.Type == queued && ev.Detail == "rerun from second"
	}) {
		t.Errorf("no QUEUED event of second says it was rerun: %+v", events)
	}
	// A finished run can be rerun again, from its first step too.
	if err := h.Engine.RerunRun(ctx, res.ID, "first"); err != nil {
		t.Fatal(err)
	}
	h.Settle()
	if got := steps.calls.count("first"); got != 2 {
		t.Errorf("first ran %d times after a rerun from it, want 2", got)
	}
}

func testRerunFailed(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &opsSteps{}
	client := registerOps(t, h, steps)
	ctx := t.Context()
	ref, err := client.RunNoWait(ctx, wf.OpsInput{Mode: wf.OpsInputModeFail})
	if err != nil {
		t.Fatal(err)
	}
	h.Settle()
	if res := h.Result(ref.ID); res.Status != runtime.RunFailed || res.Failure.Step != "work" {
		t.Fatalf("run = %s (%+v), want FAILED at work", res.Status, res.Failure)
	}
	// A rerun that fails again runs the failure handler again.
	if err := client.Rerun(ctx, ref.ID, wf.OpsRefs.Work()); err != nil {
		t.Fatal(err)
	}
	h.Settle()
	if res := h.Result(ref.ID); res.Status != runtime.RunFailed {
		t.Fatalf("run after a failing rerun = %s, want FAILED", res.Status)
	}
	if n := steps.calls.count("alert"); n != 2 {
		t.Errorf("alert ran %d times, want twice: once per failure", n)
	}
	steps.mu.Lock()
	steps.failUntil = 1
	steps.mu.Unlock()
	if err := client.Rerun(ctx, ref.ID, wf.OpsRefs.Work()); err != nil {
		t.Fatal(err)
	}
	h.Settle()
	res, err := client.Wait(ctx, ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Work == nil || res.Prepare == nil || res.Prepare.Token != "tok" {
		t.Errorf("result = work %+v, prepare %+v; want work done and prepare's output kept", res.Work, res.Prepare)
	}
	for step, want := range map[string]int{"prepare": 1, "sidecar": 1, "work": 7, "report": 1, "audit": 1, "alert": 2} {
		if n := steps.calls.count(step); n != want {
			t.Errorf("%s ran %d times, want %d", step, n, want)
		}
	}
}

func testRerunCancelled(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &shiftSteps{}
	client, err := wf.RegisterChain(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ref, err := client.RunNoWait(ctx, wf.ChainInput{Start: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Engine.CancelRun(ctx, ref.ID); err != nil {
		t.Fatal(err)
	}
	// Rerun from second: first, cancelled before it ran, runs too, as a
	// retry would run it, since second needs its output.
	if err := h.Engine.RerunRun(ctx, ref.ID, "second"); err != nil {
		t.Fatal(err)
	}
	res, err := client.Wait(ctx, ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Third == nil || res.Third.Value != 4 {
		t.Errorf("third = %+v, want 4", res.Third)
	}
	if diff := cmp.Diff([]string{"first", "second", "third"}, steps.calls.list()); diff != "" {
		t.Errorf("steps ran (-want +got):\n%s", diff)
	}
}

func testRerunRunning(t *testing.T, newH newHarness) {
	h := newH(t)
	client, err := wf.RegisterChain(h.Engine, &shiftSteps{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(t.Context(), wf.ChainInput{Start: 1})
	if err != nil {
		t.Fatal(err)
	}
	err = h.Engine.RerunRun(t.Context(), ref.ID, "second")
	if !errors.Is(err, runtime.ErrNotRerunnable) || !strings.Contains(err.Error(), "is RUNNING") {
		t.Errorf("rerun of a running run = %v, want ErrNotRerunnable saying it is RUNNING", err)
	}
	if err := h.Engine.RerunRun(t.Context(), runtime.RunID{1}, "second"); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("rerun of no run = %v, want ErrRunNotFound", err)
	}
	h.Settle()
	if got := h.Trail(ref.ID, "second"); len(got) != 3 {
		t.Errorf("second's trail = %v: the refused rerun changed the run", got)
	}
}

func testRerunUnknownStep(t *testing.T, newH newHarness) {
	h := newH(t)
	client := registerOps(t, h, &opsSteps{})
	ctx := t.Context()
	ref, err := client.RunNoWait(ctx, wf.OpsInput{Mode: wf.OpsInputModeOk})
	if err != nil {
		t.Fatal(err)
	}
	h.Settle()
	for from, want := range map[string]string{
		"werk":  `workflow ops has no step "werk" to rerun from; did you mean "work"?`,
		"alert": `"alert" is the failure handler of workflow ops`,
		"":      "no step given",
	} {
		err := h.Engine.RerunRun(ctx, ref.ID, from)
		if !errors.Is(err, runtime.ErrUnknownStep) || !strings.Contains(err.Error(), want) {
			t.Errorf("RerunRun from %q = %v, want ErrUnknownStep saying %q", from, err, want)
		}
	}
	if err := client.Rerun(ctx, ref.ID, wf.ChainRefs.Second()); !errors.Is(err, runtime.ErrUnknownStep) {
		t.Errorf("Rerun from a step of another workflow = %v, want ErrUnknownStep", err)
	}
	if got := h.Result(ref.ID).Status; got != runtime.RunCompleted {
		t.Errorf("run = %s after refused reruns, want COMPLETED", got)
	}
}

func testRerunSleep(t *testing.T, newH newHarness) {
	h := newH(t)
	client, err := wf.RegisterSleeps(h.Engine, sleepsNoop{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ref, err := client.RunNoWait(ctx, wf.SleepsInput{})
	if err != nil {
		t.Fatal(err)
	}
	h.Settle()
	if got := h.Result(ref.ID).Status; got != runtime.RunCompleted {
		t.Fatalf("run = %s, want COMPLETED", got)
	}
	if err := h.Engine.RerunRun(ctx, ref.ID, "day"); err != nil {
		t.Fatal(err)
	}
	h.Advance(23 * time.Hour)
	if got := h.Steps(ref.ID)["day"]; got != runtime.TaskSleeping {
		t.Fatalf("day is %s 23h into the rerun, want SLEEPING again", got)
	}
	h.Advance(2 * time.Hour)
	res := h.Result(ref.ID)
	if res.Status != runtime.RunCompleted {
		t.Fatalf("run = %s after the sleep, want COMPLETED", res.Status)
	}
	checkTrail(t, h, ref.ID, "short", trail(queued, sleeping, woken, completed))
	checkTrail(t, h, ref.ID, "after-day", trail(queued, started, completed, queued, started, completed))
}

// sleepsNoop is the sleeps workflow's code: nothing.
type sleepsNoop struct{}

func (sleepsNoop) Start(context.Context, wf.SleepsInput) error { return nil }
func (sleepsNoop) AfterBoth(context.Context, wf.SleepsInput, wf.SleepsAfterBothParents) error {
	return nil
}
func (sleepsNoop) AfterDay(context.Context, wf.SleepsInput, wf.SleepsAfterDayParents) error {
	return nil
}

// A rerun from a map step starts its item runs again, and from a child
// workflow step a new child run; skipIf conditions are evaluated again,
// and a wait step waits again, taking, as any wait does, the first event
// of its name sent since the run was created.
func testRerunMapAndChild(t *testing.T, newH newHarness) {
	h := newH(t)
	ctx := t.Context()

	charges := &ordersSteps{}
	orders, err := wf.RegisterOrders(h.Engine, charges)
	if err != nil {
		t.Fatal(err)
	}
	lines := []wf.OrdersInputLinesItem{{SKU: "a", Cents: 1}, {SKU: "b", Cents: 2}}
	res, err := orders.Run(ctx, wf.OrdersInput{OrderID: "o-1", Lines: lines})
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(time.Minute)
	if err := orders.Rerun(ctx, res.ID, wf.OrdersRefs.ChargeLine()); err != nil {
		t.Fatal(err)
	}
	again, err := orders.Wait(ctx, res.ID)
	if err != nil || again.Total == nil || again.Total.Charges != 2 {
		t.Fatalf("Wait after the rerun = %+v, %v", again, err)
	}
	charges.mu.Lock()
	charged := slices.Sorted(slices.Values(charges.charged))
	charges.mu.Unlock()
	if diff := cmp.Diff([]string{"a", "a", "b", "b"}, charged); diff != "" {
		t.Errorf("charged (-want +got):\n%s", diff)
	}
	if n := len(h.ChildRuns(res.ID, "charge-line")); n != 4 {
		t.Errorf("charge-line has %d item runs, want 4: two per execution", n)
	}

	if _, err := wf.RegisterShipment(h.Engine, &shipmentSteps{}); err != nil {
		t.Fatal(err)
	}
	delivery, err := wf.RegisterDelivery(h.Engine, deliverySteps{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := delivery.RunNoWait(ctx, wf.DeliveryInput{OrderID: "o-2", Address: wf.DeliveryInputAddress{City: "paris"}})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	// The shipment, a child run, is not rerun while its parent runs: the
	// parent's step might still count it.
	kid := h.ChildRuns(ref.ID, "ship")[0].ID
	if err := h.Engine.RerunRun(ctx, kid, "label"); !errors.Is(err, runtime.ErrNotRerunnable) || !strings.Contains(err.Error(), "which is still running") {
		t.Errorf("rerun of a child run of a running run = %v, want ErrNotRerunnable", err)
	}
	if _, err := delivery.SendDelivered(ctx, "o-2", wf.DeliveryDeliveredEvent{SignedBy: "bob"}); err != nil {
		t.Fatal(err)
	}
	h.Advance(25 * time.Hour)
	if got := h.Result(ref.ID).Status; got != runtime.RunCompleted {
		t.Fatalf("delivery = %s, want COMPLETED", got)
	}
	if err := delivery.Rerun(ctx, ref.ID, wf.DeliveryRefs.Ship()); err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	if got := h.Steps(ref.ID)["feedback"]; got != runtime.TaskWaiting {
		t.Fatalf("feedback is %s after the rerun, want WAITING again", got)
	}
	h.Advance(25 * time.Hour)
	done, err := delivery.Wait(ctx, ref.ID)
	if err != nil || done.Close == nil || done.Close.Summary != "signed by bob" {
		t.Fatalf("Wait after the rerun = %+v, %v", done, err)
	}
	if kids := h.ChildRuns(ref.ID, "ship"); len(kids) != 2 || kids[1].Status != runtime.RunCompleted {
		t.Errorf("ship's child runs = %d, want 2 (a new one for the rerun)", len(kids))
	}
	checkTrail(t, h, ref.ID, "reship", trail(queued, skipped, queued, skipped))
	checkTrail(t, h, ref.ID, "confirm", trail(queued, store.EventWaiting, woken, completed, queued, store.EventWaiting, woken, completed))
	checkTrail(t, h, ref.ID, "pack", trail(queued, started, completed))
	// Once the parent has ended, the child run can be rerun; the parent
	// keeps what its step took.
	if err := h.Engine.RerunRun(ctx, kid, "label"); err != nil {
		t.Fatalf("rerun of a child run of an ended run: %v", err)
	}
	h.RunUntilIdle()
	if got := h.Result(kid).Status; got != runtime.RunCompleted {
		t.Errorf("the rerun child run is %s, want COMPLETED", got)
	}
	if got := h.Result(ref.ID).Status; got != runtime.RunCompleted {
		t.Errorf("its parent is %s, want COMPLETED as it was", got)
	}
}
