package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/examples/orders/workflow"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// The acceptance suite runs workflows end to end through their generated
// clients, on a virtual clock, against each store.

func TestAcceptanceMemory(t *testing.T) {
	runAcceptance(t, memoryHarness)
}

func TestAcceptancePostgres(t *testing.T) {
	runAcceptance(t, postgresHarness)
}

type newHarness func(t *testing.T) *trellistest.Harness

// memoryHarness and postgresHarness are the two stores every behaviour
// test runs against: the memory store, and a Postgres schema of the
// test's own.
func memoryHarness(t *testing.T) *trellistest.Harness { return trellistest.New(t) }

func postgresHarness(t *testing.T) *trellistest.Harness {
	return trellistest.New(t, trellistest.WithStore(pgstore.New(pgtest.Pool(t))))
}

func runAcceptance(t *testing.T, newH newHarness) {
	tests := []struct {
		name string
		fn   func(*testing.T, newHarness)
	}{
		{"LinearChain", testChain},
		{"Diamond", testDiamond},
		{"FanOutFanInAndTwoRoots", testFanOut},
		{"OrderWorkflowBothOutcomes", testOrderWorkflow},
		{"BranchOpenSleepsThenMerges", testBranchOpen},
		{"BranchClosedCascadesThreeLevels", testBranchClosed},
		{"SkipIfConditionsAreOred", testSkipIfOr},
		{"Sleep24Hours", testSleepDay},
		{"TwoConcurrentSleeps", testConcurrentSleeps},
		{"RetrySucceedsOnThirdAttempt", testRetryThird},
		{"PermanentFailure", testPermanentFailure},
		{"NonRetryableError", testNonRetryable},
		{"PanicIsAFailedAttempt", testPanic},
		{"StepTimeout", testTimeout},
		{"IdempotencyKey", testIdempotency},
		{"CancelSleepingRun", testCancelSleeping},
		{"CancelStopsRunningStep", testCancelRunning},
		{"FailedSiblingStopsBlockedStep", testSiblingStopsBlocked},
		{"RetryFromFailedKeepsOutputs", testRetryRun},
		{"InvalidInputRefused", testInvalidInput},
		{"RequiredInputNamedByPath", testRequiredInputNamed},
		{"InvalidOutputFailsTheStep", testInvalidOutput},
		{"RunManyIsAllOrNothing", testRunMany},
		{"RunManyWithIdempotencyKeys", testRunManyKeys},
		{"IdempotencyKeysMisused", testRunManyKeysMisused},
		{"WaitManyRunsEndingAtDifferentTimes", testWaitMany},
		{"ResultDoesNotWait", testResultDoesNotWait},
		{"MapStepOverLineItems", testMapOrders},
		{"ChildWorkflowsAndEvents", testDelivery},
		{"EventsStartRuns", testStartEvents},
		{"TagsKeptAndInherited", testTags},
		{"PublishStartsRunsAndWakesWaits", testPublishWakesWaits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newH) })
	}
}

// calls records which steps ran, safely from concurrent steps.
type calls struct {
	mu    sync.Mutex
	steps []string
}

func (c *calls) add(step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.steps = append(c.steps, step)
}

func (c *calls) count(step string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.steps {
		if s == step {
			n++
		}
	}
	return n
}

func (c *calls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.steps)
}

func trail(types ...store.EventType) []store.EventType { return types }

const (
	queued    = store.EventQueued
	started   = store.EventStarted
	completed = store.EventCompleted
	skipped   = store.EventSkipped
	failed    = store.EventFailed
	retrying  = store.EventRetrying
	sleeping  = store.EventSleeping
	woken     = store.EventWoken
	cancelled = store.EventCancelled
	timedOut  = store.EventTimedOut
)

func checkTrail(t *testing.T, h *trellistest.Harness, id runtime.RunID, step string, want []store.EventType) {
	t.Helper()
	if diff := cmp.Diff(want, h.Trail(id, step)); diff != "" {
		t.Errorf("event trail of %s (-want +got):\n%s", step, diff)
	}
}

func checkSteps(t *testing.T, h *trellistest.Harness, id runtime.RunID, want map[string]runtime.TaskStatus) {
	t.Helper()
	if diff := cmp.Diff(want, h.Steps(id)); diff != "" {
		t.Errorf("step statuses (-want +got):\n%s", diff)
	}
}

// --- chain, diamond, fan-out ----------------------------------------------

type chainSteps struct{ calls calls }

func (s *chainSteps) First(_ context.Context, in wf.ChainInput) (wf.ChainFirstOutput, error) {
	s.calls.add("first")
	return wf.ChainFirstOutput{Value: in.Start + 1}, nil
}

func (s *chainSteps) Second(_ context.Context, _ wf.ChainInput, p wf.ChainSecondParents) (wf.ChainSecondOutput, error) {
	s.calls.add("second")
	return wf.ChainSecondOutput{Value: p.First.Value + 1}, nil
}

func (s *chainSteps) Third(_ context.Context, _ wf.ChainInput, p wf.ChainThirdParents) (wf.ChainThirdOutput, error) {
	s.calls.add("third")
	return wf.ChainThirdOutput{Value: p.Second.Value + 1}, nil
}

func testChain(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &chainSteps{}
	client, err := wf.RegisterChain(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Run(t.Context(), wf.ChainInput{Start: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runtime.RunCompleted || res.Third == nil || res.Third.Value != 13 {
		t.Fatalf("result = %+v, want COMPLETED with third = 13", res)
	}
	if diff := cmp.Diff([]string{"first", "second", "third"}, steps.calls.list()); diff != "" {
		t.Errorf("steps ran (-want +got):\n%s", diff)
	}
	for _, step := range []string{"first", "second", "third"} {
		checkTrail(t, h, res.ID, step, trail(queued, started, completed))
	}
	if res.Second == nil || res.Second.Value != 12 {
		t.Fatalf("output of second = %+v, want 12", res.Second)
	}
	// The typed result is read through the step references; the test kit
	// reads the same output by the same reference.
	if out, ok := trellistest.Output(h, res.ID, wf.ChainRefs.Second()); !ok || out != *res.Second {
		t.Errorf("trellistest.Output(second) = %+v, %v; want %+v, true", out, ok, *res.Second)
	}
}

type diamondSteps struct{ calls calls }

func (s *diamondSteps) Top(_ context.Context, in wf.DiamondInput) (wf.DiamondTopOutput, error) {
	s.calls.add("top")
	seed := int64(1)
	if in.Seed != nil {
		seed = *in.Seed
	}
	return wf.DiamondTopOutput{Value: seed}, nil
}

func (s *diamondSteps) Left(_ context.Context, _ wf.DiamondInput, p wf.DiamondLeftParents) (wf.DiamondLeftOutput, error) {
	s.calls.add("left")
	return wf.DiamondLeftOutput{Value: p.Top.Value * 10}, nil
}

func (s *diamondSteps) Right(_ context.Context, _ wf.DiamondInput, p wf.DiamondRightParents) (wf.DiamondRightOutput, error) {
	s.calls.add("right")
	return wf.DiamondRightOutput{Value: p.Top.Value * 100}, nil
}

func (s *diamondSteps) Bottom(_ context.Context, _ wf.DiamondInput, p wf.DiamondBottomParents) (wf.DiamondBottomOutput, error) {
	s.calls.add("bottom")
	return wf.DiamondBottomOutput{Sum: p.Left.Value + p.Right.Value}, nil
}

func testDiamond(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &diamondSteps{}
	client, err := wf.RegisterDiamond(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(2)
	res, err := client.Run(t.Context(), wf.DiamondInput{Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bottom == nil || res.Bottom.Sum != 220 {
		t.Fatalf("bottom = %+v, want sum 220 (it received both parents)", res.Bottom)
	}
	if n := steps.calls.count("bottom"); n != 1 {
		t.Errorf("bottom ran %d times", n)
	}
	checkTrail(t, h, res.ID, "bottom", trail(queued, started, completed))
}

type fanoutSteps struct{ calls calls }

func (s *fanoutSteps) Split(context.Context, wf.FanoutInput) error {
	s.calls.add("split")
	return nil
}

func (s *fanoutSteps) OtherRoot(context.Context, wf.FanoutInput) error {
	s.calls.add("other-root")
	return nil
}

func (s *fanoutSteps) Worker1(context.Context, wf.FanoutInput, wf.FanoutWorker1Parents) (wf.FanoutWorker1Output, error) {
	s.calls.add("worker-1")
	return wf.FanoutWorker1Output{Done: "w1"}, nil
}

func (s *fanoutSteps) Worker2(context.Context, wf.FanoutInput, wf.FanoutWorker2Parents) (wf.FanoutWorker2Output, error) {
	s.calls.add("worker-2")
	return wf.FanoutWorker2Output{Done: "w2"}, nil
}

func (s *fanoutSteps) Worker3(context.Context, wf.FanoutInput, wf.FanoutWorker3Parents) (wf.FanoutWorker3Output, error) {
	s.calls.add("worker-3")
	return wf.FanoutWorker3Output{Done: "w3"}, nil
}

func (s *fanoutSteps) Worker4(context.Context, wf.FanoutInput, wf.FanoutWorker4Parents) (wf.FanoutWorker4Output, error) {
	s.calls.add("worker-4")
	return wf.FanoutWorker4Output{Done: "w4"}, nil
}

func (s *fanoutSteps) Join(_ context.Context, _ wf.FanoutInput, p wf.FanoutJoinParents) (wf.FanoutJoinOutput, error) {
	s.calls.add("join")
	return wf.FanoutJoinOutput{All: []string{p.Worker1.Done, p.Worker2.Done, p.Worker3.Done, p.Worker4.Done}}, nil
}

func testFanOut(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &fanoutSteps{}
	client, err := wf.RegisterFanout(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(t.Context(), wf.FanoutInput{})
	if err != nil {
		t.Fatal(err)
	}
	// Both roots are queued the moment the run is created.
	for _, root := range []string{"split", "other-root"} {
		checkTrail(t, h, ref.ID, root, trail(queued))
	}
	h.RunUntilIdle()
	res, err := client.Wait(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Join == nil || !cmp.Equal(res.Join.All, []string{"w1", "w2", "w3", "w4"}) {
		t.Fatalf("join = %+v", res.Join)
	}
	for _, s := range []string{"split", "other-root", "worker-1", "worker-2", "worker-3", "worker-4", "join"} {
		if n := steps.calls.count(s); n != 1 {
			t.Errorf("%s ran %d times, want once", s, n)
		}
	}
	checkTrail(t, h, ref.ID, "join", trail(queued, started, completed))
}

// --- branches, cascade, skipIf -------------------------------------------

type branchSteps struct{ calls calls }

func (s *branchSteps) Gate(_ context.Context, in wf.BranchesInput) (wf.BranchesGateOutput, error) {
	s.calls.add("gate")
	return wf.BranchesGateOutput{Open: in.Open}, nil
}

func (s *branchSteps) Yes1(context.Context, wf.BranchesInput, wf.BranchesYes1Parents) error {
	s.calls.add("yes-1")
	return nil
}

func (s *branchSteps) Yes2(context.Context, wf.BranchesInput, wf.BranchesYes2Parents) error {
	s.calls.add("yes-2")
	return nil
}

func (s *branchSteps) No1(context.Context, wf.BranchesInput, wf.BranchesNo1Parents) error {
	s.calls.add("no-1")
	return nil
}

func (s *branchSteps) No2(context.Context, wf.BranchesInput, wf.BranchesNo2Parents) error {
	s.calls.add("no-2")
	return nil
}

func (s *branchSteps) No3(context.Context, wf.BranchesInput, wf.BranchesNo3Parents) error {
	s.calls.add("no-3")
	return nil
}

func (s *branchSteps) Merge(_ context.Context, _ wf.BranchesInput, p wf.BranchesMergeParents) error {
	s.calls.add(fmt.Sprintf("merge yes=%v no=%v", p.Yes2, p.No3))
	return nil
}

func (s *branchSteps) Announce(context.Context, wf.BranchesInput, wf.BranchesAnnounceParents) error {
	s.calls.add("announce")
	return nil
}

func testBranchOpen(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &branchSteps{}
	client, err := wf.RegisterBranches(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Run(t.Context(), wf.BranchesInput{Open: true})
	if !errors.Is(err, runtime.ErrStillRunning) || res.Status != runtime.RunRunning {
		t.Fatalf("Run = %v, %v; want the run sleeping in the open branch", res.Status, err)
	}
	if got := h.Steps(res.ID)["yes-nap"]; got != store.TaskSleeping {
		t.Fatalf("yes-nap = %s, want SLEEPING", got)
	}
	h.Advance(2 * time.Hour)
	res, err = client.Wait(t.Context(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gate", "yes-1", "yes-2", "merge yes=true no=false", "announce"}
	if diff := cmp.Diff(want, steps.calls.list()); diff != "" {
		t.Errorf("steps ran (-want +got):\n%s", diff)
	}
	checkSteps(t, h, res.ID, map[string]runtime.TaskStatus{
		"gate": store.TaskCompleted, "yes-1": store.TaskCompleted, "yes-nap": store.TaskCompleted, "yes-2": store.TaskCompleted,
		"no-1": store.TaskSkipped, "no-2": store.TaskSkipped, "no-3": store.TaskSkipped,
		"merge": store.TaskCompleted, "announce": store.TaskCompleted,
	})
	checkTrail(t, h, res.ID, "yes-nap", trail(queued, sleeping, woken, completed))
	checkTrail(t, h, res.ID, "no-1", trail(queued, skipped))
	checkTrail(t, h, res.ID, "no-3", trail(queued, skipped))
	checkTrail(t, h, res.ID, "merge", trail(queued, started, completed))
	if got := h.Times(res.ID, "yes-2", started); !cmp.Equal(got, []time.Duration{2 * time.Hour}) {
		t.Errorf("yes-2 started at %v, want after the 2h sleep", got)
	}
}

func testBranchClosed(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &branchSteps{}
	client, err := wf.RegisterBranches(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Run(t.Context(), wf.BranchesInput{Open: false})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gate", "no-1", "no-2", "no-3", "merge yes=false no=true", "announce"}
	if diff := cmp.Diff(want, steps.calls.list()); diff != "" {
		t.Errorf("steps ran (-want +got):\n%s", diff)
	}
	checkSteps(t, h, res.ID, map[string]runtime.TaskStatus{
		"gate": store.TaskCompleted, "yes-1": store.TaskSkipped, "yes-nap": store.TaskSkipped, "yes-2": store.TaskSkipped,
		"no-1": store.TaskCompleted, "no-2": store.TaskCompleted, "no-3": store.TaskCompleted,
		"merge": store.TaskCompleted, "announce": store.TaskCompleted,
	})
	// The skipped branch cascades three levels, the sleep among them, and
	// says why.
	for _, step := range []string{"yes-1", "yes-nap", "yes-2"} {
		checkTrail(t, h, res.ID, step, trail(queued, skipped))
	}
	var details []string
	for _, ev := range h.Events(res.ID) {
		if ev.Type == skipped {
			details = append(details, ev.Step+": "+ev.Detail)
		}
	}
	wantDetails := []string{
		`yes-1: skipIf "!parents.gate.open" is true`,
		"yes-nap: all parents were skipped",
		"yes-2: all parents were skipped",
	}
	if diff := cmp.Diff(wantDetails, details); diff != "" {
		t.Errorf("skip reasons (-want +got):\n%s", diff)
	}
	if h.Now() != h.Start {
		t.Errorf("the clock moved by %v; a skipped sleep must not wait", h.Now().Sub(h.Start))
	}
}

func testSkipIfOr(t *testing.T, newH newHarness) {
	yes := true
	tests := []struct {
		name    string
		in      wf.BranchesInput
		skipped bool
	}{
		{"neither", wf.BranchesInput{}, false},
		{"first", wf.BranchesInput{Quiet: &yes}, true},
		{"second", wf.BranchesInput{Muted: &yes}, true},
		{"both", wf.BranchesInput{Quiet: &yes, Muted: &yes}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newH(t)
			client, err := wf.RegisterBranches(h.Engine, &branchSteps{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := client.Run(t.Context(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			want := store.TaskCompleted
			if tt.skipped {
				want = store.TaskSkipped
			}
			if got := h.Steps(res.ID)["announce"]; got != want {
				t.Errorf("announce = %s, want %s", got, want)
			}
		})
	}
}

// --- sleeps ---------------------------------------------------------------

type sleepSteps struct{ calls calls }

func (s *sleepSteps) Start(context.Context, wf.SleepsInput) error {
	s.calls.add("start")
	return nil
}

func (s *sleepSteps) AfterBoth(_ context.Context, _ wf.SleepsInput, p wf.SleepsAfterBothParents) error {
	s.calls.add(fmt.Sprintf("after-both short=%v long=%v", p.Short, p.Long))
	return nil
}

func (s *sleepSteps) AfterDay(context.Context, wf.SleepsInput, wf.SleepsAfterDayParents) error {
	s.calls.add("after-day")
	return nil
}

func testSleepDay(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &sleepSteps{}
	client, err := wf.RegisterSleeps(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(t.Context(), wf.SleepsInput{})
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(24*time.Hour - time.Second)
	if n := steps.calls.count("after-day"); n != 0 {
		t.Fatal("after-day ran before the day passed")
	}
	if got := h.Steps(ref.ID)["day"]; got != store.TaskSleeping {
		t.Fatalf("day = %s, want SLEEPING", got)
	}
	h.Advance(time.Second)
	res, err := client.Wait(t.Context(), ref.ID)
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("after 24h: %v, %v", res.Status, err)
	}
	checkTrail(t, h, ref.ID, "day", trail(queued, sleeping, woken, completed))
	if got := h.Times(ref.ID, "day", woken); !cmp.Equal(got, []time.Duration{24 * time.Hour}) {
		t.Errorf("day woke at %v, want 24h", got)
	}
	if got := h.Times(ref.ID, "after-day", started); !cmp.Equal(got, []time.Duration{24 * time.Hour}) {
		t.Errorf("after-day started at %v, want 24h", got)
	}
	// The SLEEPING event says when the sleep ends; no other event has a
	// wake time.
	if got := wakeTimes(h, ref.ID, "day"); !cmp.Equal(got, []string{"QUEUED", "SLEEPING wake 24h0m0s", "WOKEN", "COMPLETED"}) {
		t.Errorf("wake times of day = %q", got)
	}
}

// wakeTimes lists the events of a step as their type and, when they have
// one, their wake time relative to h.Start.
func wakeTimes(h *trellistest.Harness, id runtime.RunID, step string) []string {
	var out []string
	for _, ev := range h.Events(id) {
		switch {
		case ev.Step != step:
		case ev.WakeAt.IsZero():
			out = append(out, string(ev.Type))
		default:
			out = append(out, fmt.Sprintf("%s wake %v", ev.Type, ev.WakeAt.Sub(h.Start)))
		}
	}
	return out
}

func testConcurrentSleeps(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &sleepSteps{}
	client, err := wf.RegisterSleeps(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(t.Context(), wf.SleepsInput{})
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(90 * time.Minute)
	st := h.Steps(ref.ID)
	if st["short"] != store.TaskCompleted || st["long"] != store.TaskSleeping || st["after-both"] != store.TaskPending {
		t.Fatalf("at 1h30: short %s, long %s, after-both %s", st["short"], st["long"], st["after-both"])
	}
	h.Advance(90 * time.Minute)
	if got := h.Times(ref.ID, "short", woken); !cmp.Equal(got, []time.Duration{time.Hour}) {
		t.Errorf("short woke at %v", got)
	}
	if got := h.Times(ref.ID, "long", woken); !cmp.Equal(got, []time.Duration{3 * time.Hour}) {
		t.Errorf("long woke at %v", got)
	}
	if got := h.Times(ref.ID, "after-both", started); !cmp.Equal(got, []time.Duration{3 * time.Hour}) {
		t.Errorf("after-both started at %v, want 3h", got)
	}
	if n := steps.calls.count("after-both short=true long=true"); n != 1 {
		t.Errorf("after-both ran %d times with both parents", n)
	}
}

// --- failures ---------------------------------------------------------------

// opsSteps behaves as the run input's mode says. failUntil makes work fail
// on attempts of the run's current try before it (0: on every attempt);
// work's output is the attempt's number in the current try.
type opsSteps struct {
	calls     calls
	mu        sync.Mutex
	failUntil int
	failures  []runtime.Failure
	started   chan struct{} // receives when work starts, if set
	sawCancel chan error    // receives the cause when work sees its context end, if set
	// sidecarFails makes sidecar fail for good once work has started.
	sidecarFails bool
}

func (s *opsSteps) Prepare(context.Context, wf.OpsInput) (wf.OpsPrepareOutput, error) {
	s.calls.add("prepare")
	return wf.OpsPrepareOutput{Token: "tok"}, nil
}

func (s *opsSteps) Work(ctx context.Context, in wf.OpsInput, p wf.OpsWorkParents) (wf.OpsWorkOutput, error) {
	s.calls.add("work")
	info, _ := runtime.InfoFromContext(ctx)
	if p.Prepare.Token != "tok" {
		return wf.OpsWorkOutput{}, fmt.Errorf("bad token %q", p.Prepare.Token)
	}
	if s.started != nil {
		s.started <- struct{}{}
	}
	s.mu.Lock()
	try := info.Retries + 1 // the attempt's number in the run's current try
	failing := s.failUntil == 0 || try < s.failUntil
	s.mu.Unlock()
	switch in.Mode {
	case wf.OpsInputModeFail, wf.OpsInputModeFlaky:
		if failing {
			return wf.OpsWorkOutput{}, fmt.Errorf("attempt %d failed", try)
		}
	case wf.OpsInputModeFatal:
		return wf.OpsWorkOutput{}, runtime.NonRetryable(errors.New("card declined"))
	case wf.OpsInputModePanic:
		if failing {
			panic("boom")
		}
	case wf.OpsInputModeTimeout:
		if failing {
			<-ctx.Done()
			if s.sawCancel != nil {
				s.sawCancel <- context.Cause(ctx)
			}
			return wf.OpsWorkOutput{}, ctx.Err()
		}
	}
	return wf.OpsWorkOutput{Attempt: int64(try)}, nil
}

func (s *opsSteps) Sidecar(context.Context, wf.OpsInput, wf.OpsSidecarParents) error {
	s.calls.add("sidecar")
	if s.sidecarFails {
		<-s.started
		return runtime.NonRetryable(errors.New("sidecar broke"))
	}
	return nil
}

func (s *opsSteps) Report(context.Context, wf.OpsInput, wf.OpsReportParents) error {
	s.calls.add("report")
	return nil
}

func (s *opsSteps) Audit(context.Context, wf.OpsInput, wf.OpsAuditParents) error {
	s.calls.add("audit")
	return nil
}

func (s *opsSteps) Alert(_ context.Context, _ wf.OpsInput, f runtime.Failure) error {
	s.calls.add("alert")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, f)
	return nil
}

func registerOps(t *testing.T, h *trellistest.Harness, s *opsSteps) *wf.OpsClient {
	t.Helper()
	client, err := wf.RegisterOps(h.Engine, s)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func testRetryThird(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &opsSteps{failUntil: 3}
	client := registerOps(t, h, steps)
	res, err := client.Run(t.Context(), wf.OpsInput{Mode: wf.OpsInputModeFlaky})
	if !errors.Is(err, runtime.ErrStillRunning) {
		t.Fatalf("Run = %v; want the run waiting for its first backoff", err)
	}
	h.Settle()
	res, err = client.Wait(t.Context(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Work == nil || res.Work.Attempt != 3 {
		t.Fatalf("work = %+v, want success on attempt 3", res.Work)
	}
	// initialDelay 30s, backoffFactor 3: retries after 30s, then 90s more.
	want := []time.Duration{0, 30 * time.Second, 120 * time.Second}
	if got := h.Times(res.ID, "work", started); !cmp.Equal(got, want) {
		t.Errorf("work started at %v, want %v", got, want)
	}
	checkTrail(t, h, res.ID, "work", trail(queued, started, retrying, queued, started, retrying, queued, started, completed))
	// Each RETRYING event says when the next attempt is due.
	wakes := []string{"QUEUED", "STARTED", "RETRYING wake 30s", "QUEUED", "STARTED", "RETRYING wake 2m0s", "QUEUED", "STARTED", "COMPLETED"}
	if got := wakeTimes(h, res.ID, "work"); !cmp.Equal(got, wakes) {
		t.Errorf("wake times of work = %q, want %q", got, wakes)
	}
	var details []string
	for _, ev := range h.Events(res.ID) {
		if ev.Step == "work" && ev.Type == retrying {
			details = append(details, ev.Detail)
		}
	}
	if !cmp.Equal(details, []string{"attempt 1 failed", "attempt 2 failed"}) {
		t.Errorf("retry reasons = %q", details)
	}
}

func testPermanentFailure(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &opsSteps{}
	client := registerOps(t, h, steps)
	ref, err := client.RunNoWait(t.Context(), wf.OpsInput{Mode: wf.OpsInputModeFail})
	if err != nil {
		t.Fatal(err)
	}
	h.Settle()
	res, err := client.Wait(t.Context(), ref.ID)
	var rf *runtime.RunFailedError
	if !errors.As(err, &rf) || rf.Step != "work" || rf.Message != "attempt 3 failed" {
		t.Fatalf("Wait error = %v, want work's last failure", err)
	}
	if res.Status != runtime.RunFailed || res.Failure == nil || res.Failure.Step != "work" {
		t.Errorf("result = %+v", res)
	}
	checkSteps(t, h, ref.ID, map[string]runtime.TaskStatus{
		"prepare": store.TaskCompleted, "work": store.TaskFailed, "sidecar": store.TaskCompleted,
		"report": store.TaskCancelled, "audit": store.TaskCancelled, "alert": store.TaskCompleted,
	})
	if n := steps.calls.count("work"); n != 3 {
		t.Errorf("work ran %d times, want 3 (maxRetries 2)", n)
	}
	if n := steps.calls.count("alert"); n != 1 {
		t.Errorf("onFailure ran %d times, want exactly once", n)
	}
	if diff := cmp.Diff([]runtime.Failure{{StepIndex: 1, Step: "work", Error: "attempt 3 failed"}}, steps.failures); diff != "" {
		t.Errorf("onFailure got (-want +got):\n%s", diff)
	}
	checkTrail(t, h, ref.ID, "work", trail(queued, started, retrying, queued, started, retrying, queued, started, failed))
	checkTrail(t, h, ref.ID, "report", trail(cancelled))
	checkTrail(t, h, ref.ID, "audit", trail(cancelled))
	checkTrail(t, h, ref.ID, "alert", trail(queued, started, completed))
	// Nothing else happens, however long we wait.
	h.Advance(48 * time.Hour)
	if n := steps.calls.count("alert"); n != 1 {
		t.Errorf("onFailure ran again")
	}
}

func testNonRetryable(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &opsSteps{}
	client := registerOps(t, h, steps)
	res, err := client.Run(t.Context(), wf.OpsInput{Mode: wf.OpsInputModeFatal})
	if !errors.Is(err, runtime.ErrRunFailed) {
		t.Fatalf("Run error = %v, want a run failure without waiting for retries", err)
	}
	if n := steps.calls.count("work"); n != 1 {
		t.Errorf("work ran %d times, want once", n)
	}
	checkTrail(t, h, res.ID, "work", trail(queued, started, failed))
	if res.Failure == nil || res.Failure.Error != "card declined" {
		t.Errorf("failure = %+v", res.Failure)
	}
}

func testPanic(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &opsSteps{failUntil: 2}
	client := registerOps(t, h, steps)
	ref, err := client.RunNoWait(t.Context(), wf.OpsInput{Mode: wf.OpsInputModePanic})
	if err != nil {
		t.Fatal(err)
	}
	h.Settle()
	res, err := client.Wait(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Work == nil || res.Work.Attempt != 2 {
		t.Fatalf("work = %+v, want success after the panic", res.Work)
	}
	for _, ev := range h.Events(ref.ID) {
		if ev.Step == "work" && ev.Type == retrying && ev.Detail != "step panicked: boom" {
			t.Errorf("retry reason = %q", ev.Detail)
		}
	}
	checkTrail(t, h, ref.ID, "work", trail(queued, started, retrying, queued, started, completed))
}

func testTimeout(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &opsSteps{failUntil: 2, started: make(chan struct{}, 4)}
	client := registerOps(t, h, steps)
	ref, err := client.RunNoWait(t.Context(), wf.OpsInput{Mode: wf.OpsInputModeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	// The first attempt blocks until its 30s deadline; move the clock
	// while it runs.
	idle := make(chan struct{})
	go func() {
		defer close(idle)
		h.RunUntilIdle()
	}()
	<-steps.started
	h.Clock.Advance(29 * time.Second)
	select {
	case <-idle:
		t.Fatal("the step ended before its timeout")
	case <-time.After(20 * time.Millisecond):
	}
	h.Clock.Advance(time.Second)
	<-idle
	h.Settle()
	res, err := client.Wait(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkTrail(t, h, ref.ID, "work", trail(queued, started, timedOut, retrying, queued, started, completed))
	for _, ev := range h.Events(ref.ID) {
		if ev.Step == "work" && ev.Type == timedOut && ev.Detail != "timed out after 30s: context deadline exceeded" {
			t.Errorf("timeout detail = %q", ev.Detail)
		}
	}
	if res.Work == nil || res.Work.Attempt != 2 {
		t.Errorf("work = %+v", res.Work)
	}
}

func testIdempotency(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &opsSteps{}
	client := registerOps(t, h, steps)
	in := wf.OpsInput{Mode: wf.OpsInputModeOk}
	first, err := client.RunNoWait(t.Context(), in, runtime.WithIdempotencyKey("order-42"), runtime.WithTenant("acme"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := client.RunNoWait(t.Context(), in, runtime.WithIdempotencyKey("order-42"), runtime.WithTenant("acme"))
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != second.ID || first.Existing || !second.Existing {
		t.Fatalf("first %+v, second %+v: want the same run, the second marked Existing", first, second)
	}
	other, err := client.RunNoWait(t.Context(), in, runtime.WithIdempotencyKey("order-43"), runtime.WithTenant("acme"))
	if err != nil || other.ID == first.ID {
		t.Fatalf("another key gave %+v, %v", other, err)
	}
	h.Settle()
	if n := steps.calls.count("prepare"); n != 2 {
		t.Errorf("prepare ran %d times, want 2 (one per distinct key)", n)
	}
	if res := h.Result(first.ID); res.Tenant != "acme" || res.Status != runtime.RunCompleted {
		t.Errorf("run = %s for tenant %q", res.Status, res.Tenant)
	}
}

func testCancelSleeping(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &sleepSteps{}
	client, err := wf.RegisterSleeps(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(t.Context(), wf.SleepsInput{})
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(2 * time.Hour) // short has woken; day and long sleep on
	ok, err := h.Engine.CancelRun(t.Context(), ref.ID)
	if err != nil || !ok {
		t.Fatalf("CancelRun = %v, %v", ok, err)
	}
	h.Settle()
	if _, err := client.Wait(t.Context(), ref.ID); !errors.Is(err, runtime.ErrRunCancelled) {
		t.Errorf("Wait error = %v, want ErrRunCancelled", err)
	}
	checkSteps(t, h, ref.ID, map[string]runtime.TaskStatus{
		"start": store.TaskCompleted, "short": store.TaskCompleted, "day": store.TaskCancelled, "long": store.TaskCancelled,
		"after-both": store.TaskCancelled, "after-day": store.TaskCancelled,
	})
	checkTrail(t, h, ref.ID, "day", trail(queued, sleeping, cancelled))
	if n := len(steps.calls.list()); n != 1 {
		t.Errorf("steps ran after cancel: %v", steps.calls.list())
	}
	if ok, _ := h.Engine.CancelRun(t.Context(), ref.ID); ok {
		t.Error("cancelling a cancelled run reported a change")
	}
}

func testCancelRunning(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &opsSteps{started: make(chan struct{}, 1), sawCancel: make(chan error, 1)}
	client := registerOps(t, h, steps)
	ref, err := client.RunNoWait(t.Context(), wf.OpsInput{Mode: wf.OpsInputModeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	idle := make(chan struct{})
	go func() {
		defer close(idle)
		h.RunUntilIdle()
	}()
	<-steps.started
	if _, err := h.Engine.CancelRun(t.Context(), ref.ID); err != nil {
		t.Fatal(err)
	}
	cause := <-steps.sawCancel
	<-idle
	if cause == nil || errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("the running step's context ended with %v, want a cancellation", cause)
	}
	checkTrail(t, h, ref.ID, "work", trail(queued, started, cancelled))
	if n := steps.calls.count("alert"); n != 0 {
		t.Error("onFailure ran for a cancelled run")
	}
}

// A step that blocks until cancelled, claimed in the same batch as a
// sibling that fails for good: the failure is recorded while the step
// still runs, which fails the run and so stops the step. (Recording a
// batch only once all its steps returned would wait forever here.)
func testSiblingStopsBlocked(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &opsSteps{started: make(chan struct{}, 1), sawCancel: make(chan error, 1), sidecarFails: true}
	client := registerOps(t, h, steps)
	res, err := client.Run(t.Context(), wf.OpsInput{Mode: wf.OpsInputModeTimeout})
	var failed *runtime.RunFailedError
	if !errors.As(err, &failed) || failed.Step != "sidecar" {
		t.Fatalf("Run = %v, want the run failed at sidecar", err)
	}
	if cause := <-steps.sawCancel; cause == nil || errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("work's context ended with %v, want a cancellation", cause)
	}
	checkTrail(t, h, res.ID, "work", trail(queued, started, cancelled))
	checkTrail(t, h, res.ID, "sidecar", trail(queued, started, store.EventFailed))
	if n := steps.calls.count("alert"); n != 1 {
		t.Errorf("onFailure ran %d times, want once", n)
	}
}

func testRetryRun(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &opsSteps{}
	client := registerOps(t, h, steps)
	ref, err := client.RunNoWait(t.Context(), wf.OpsInput{Mode: wf.OpsInputModeFail})
	if err != nil {
		t.Fatal(err)
	}
	h.Settle()
	if res := h.Result(ref.ID); res.Status != runtime.RunFailed {
		t.Fatalf("run = %s, want FAILED", res.Status)
	}
	if err := h.Engine.RetryRun(t.Context(), ref.ID); err == nil {
		// fine: it failed, so it can be retried
	} else {
		t.Fatal(err)
	}
	// This time work succeeds on the first attempt of the new try.
	steps.mu.Lock()
	steps.failUntil = 1
	steps.mu.Unlock()
	h.Settle()
	res, err := client.Wait(t.Context(), ref.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Work == nil || res.Work.Attempt != 1 {
		t.Errorf("work = %+v, want attempt 1 of the retried run", res.Work)
	}
	for step, want := range map[string]int{"prepare": 1, "sidecar": 1, "work": 4, "report": 1, "audit": 1, "alert": 1} {
		if n := steps.calls.count(step); n != want {
			t.Errorf("%s ran %d times, want %d", step, n, want)
		}
	}
	if res.Prepare == nil || res.Prepare.Token != "tok" {
		t.Errorf("prepare's output was not kept: %+v", res.Prepare)
	}
	if err := h.Engine.RetryRun(t.Context(), ref.ID); !errors.Is(err, runtime.ErrNotRetryable) {
		t.Errorf("retrying a completed run = %v, want ErrNotRetryable", err)
	}
}

func testInvalidInput(t *testing.T, newH newHarness) {
	h := newH(t)
	client := registerOps(t, h, &opsSteps{})
	empty := ""
	_, err := client.RunNoWait(t.Context(), wf.OpsInput{Mode: "sideways", Label: &empty})
	var ie *runtime.InputError
	if !errors.As(err, &ie) || !errors.Is(err, runtime.ErrInvalidInput) {
		t.Fatalf("error = %v, want an *InputError", err)
	}
	var fields []string
	for _, p := range ie.Problems {
		fields = append(fields, p.Field)
	}
	if diff := cmp.Diff([]string{"input.label", "input.mode"}, fields); diff != "" {
		t.Errorf("problem fields (-want +got):\n%s", diff)
	}
	if n := h.RunUntilIdle(); n != 0 {
		t.Errorf("%d tasks ran after a refused trigger; nothing should have been stored", n)
	}
}

// --- the order workflow of the spec ------------------------------------

// orderSteps validates orders under $1000 and records what ran.
type orderSteps struct {
	noopOrders
	calls calls
}

func (s *orderSteps) Validate(_ context.Context, in workflow.OrderProcessingInput) (workflow.OrderProcessingValidateOutput, error) {
	s.calls.add("validate")
	return workflow.OrderProcessingValidateOutput{IsValid: in.AmountCents < 100_000}, nil
}

func (s *orderSteps) Charge(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingChargeParents) (workflow.OrderProcessingChargeOutput, error) {
	s.calls.add("charge")
	id := "ch_1"
	return workflow.OrderProcessingChargeOutput{ChargeID: &id}, nil
}

func (s *orderSteps) Reject(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingRejectParents) error {
	s.calls.add("reject")
	return nil
}

func (s *orderSteps) PrepareShipment(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingPrepareShipmentParents) error {
	s.calls.add("prepare-shipment")
	return nil
}

func (s *orderSteps) Ship(context.Context, workflow.OrderProcessingInput, workflow.OrderProcessingShipParents) error {
	s.calls.add("ship")
	return nil
}

func (s *orderSteps) Finalize(_ context.Context, _ workflow.OrderProcessingInput, p workflow.OrderProcessingFinalizeParents) error {
	s.calls.add(fmt.Sprintf("finalize ship=%v reject=%v", p.Ship, p.Reject))
	return nil
}

func testOrderWorkflow(t *testing.T, newH newHarness) {
	t.Run("valid", func(t *testing.T) {
		h := newH(t)
		steps := &orderSteps{}
		orders, err := workflow.RegisterOrderProcessing(h.Engine, steps)
		if err != nil {
			t.Fatal(err)
		}
		res, err := orders.Run(t.Context(), workflow.OrderProcessingInput{OrderID: "o-1", AmountCents: 1500})
		if !errors.Is(err, runtime.ErrStillRunning) {
			t.Fatalf("Run = %v, want the run in its fraud window", err)
		}
		h.Advance(24 * time.Hour)
		res, err = orders.Wait(t.Context(), res.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"validate", "charge", "prepare-shipment", "ship", "finalize ship=true reject=false"}
		if diff := cmp.Diff(want, steps.calls.list()); diff != "" {
			t.Errorf("steps ran (-want +got):\n%s", diff)
		}
		checkSteps(t, h, res.ID, map[string]runtime.TaskStatus{
			"validate": store.TaskCompleted, "charge": store.TaskCompleted, "reject": store.TaskSkipped,
			"fraud-window": store.TaskCompleted, "prepare-shipment": store.TaskCompleted,
			"ship": store.TaskCompleted, "finalize": store.TaskCompleted, "notify-admin": store.TaskPending,
		})
		checkTrail(t, h, res.ID, "fraud-window", trail(queued, sleeping, woken, completed))
		if res.Charge == nil || *res.Charge.ChargeID != "ch_1" {
			t.Errorf("charge output = %+v", res.Charge)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		h := newH(t)
		steps := &orderSteps{}
		orders, err := workflow.RegisterOrderProcessing(h.Engine, steps)
		if err != nil {
			t.Fatal(err)
		}
		res, err := orders.Run(t.Context(), workflow.OrderProcessingInput{OrderID: "o-2", AmountCents: 250_000})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"validate", "reject", "finalize ship=false reject=true"}
		if diff := cmp.Diff(want, steps.calls.list()); diff != "" {
			t.Errorf("steps ran (-want +got):\n%s", diff)
		}
		checkSteps(t, h, res.ID, map[string]runtime.TaskStatus{
			"validate": store.TaskCompleted, "charge": store.TaskSkipped, "reject": store.TaskCompleted,
			"fraud-window": store.TaskSkipped, "prepare-shipment": store.TaskSkipped,
			"ship": store.TaskSkipped, "finalize": store.TaskCompleted, "notify-admin": store.TaskPending,
		})
		wantSteps := workflow.OrderProcessingStepStatuses{
			Validate: runtime.TaskCompleted, Charge: runtime.TaskSkipped, Reject: runtime.TaskCompleted,
			FraudWindow: runtime.TaskSkipped, PrepareShipment: runtime.TaskSkipped,
			Ship: runtime.TaskSkipped, Finalize: runtime.TaskCompleted, NotifyAdmin: runtime.TaskPending,
		}
		if res.Steps != wantSteps {
			t.Errorf("typed step statuses = %+v, want %+v", res.Steps, wantSteps)
		}
		if res.Charge != nil {
			t.Errorf("a skipped charge has output %+v", res.Charge)
		}
	})
}

// testResultDoesNotWait reads a run in its fraud window, after it ends,
// and with ids that are not the workflow's runs, through the typed client.
func testResultDoesNotWait(t *testing.T, newH newHarness) {
	h := newH(t)
	orders, err := workflow.RegisterOrderProcessing(h.Engine, &orderSteps{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := orders.RunNoWait(t.Context(), workflow.OrderProcessingInput{OrderID: "o-1", AmountCents: 1500})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	res, err := orders.Result(t.Context(), ref.ID)
	if err != nil {
		t.Fatalf("Result of a sleeping run: %v", err)
	}
	wantSteps := workflow.OrderProcessingStepStatuses{
		Validate: runtime.TaskCompleted, Charge: runtime.TaskCompleted, Reject: runtime.TaskSkipped,
		FraudWindow: runtime.TaskSleeping, PrepareShipment: runtime.TaskCompleted,
		Ship: runtime.TaskPending, Finalize: runtime.TaskPending, NotifyAdmin: runtime.TaskPending,
	}
	if res.Status != runtime.RunRunning || res.Steps != wantSteps {
		t.Errorf("in the fraud window: status %s, steps %+v, want RUNNING, %+v", res.Status, res.Steps, wantSteps)
	}
	if res.Validate == nil || !res.Validate.IsValid || res.Charge == nil || *res.Charge.ChargeID != "ch_1" {
		t.Errorf("in the fraud window, outputs validate = %+v, charge = %+v", res.Validate, res.Charge)
	}
	if _, ok := trellistest.Output(h, ref.ID, workflow.OrderProcessingRefs.Ship()); ok {
		t.Error("in the fraud window, trellistest.Output reads an output of ship, which has not run")
	}

	h.Advance(24 * time.Hour)
	if res, err = orders.Result(t.Context(), ref.ID); err != nil || res.Status != runtime.RunCompleted || res.Steps.Ship != runtime.TaskCompleted {
		t.Errorf("after the fraud window: %+v, %v", res, err)
	}

	// A run whose steps have not run yet: zero outputs, and statuses that
	// say why.
	ref, err = orders.RunNoWait(t.Context(), workflow.OrderProcessingInput{OrderID: "o-2", AmountCents: 1500})
	if err != nil {
		t.Fatal(err)
	}
	res, err = orders.Result(t.Context(), ref.ID)
	if err != nil || res.Status != runtime.RunRunning || res.Steps.Validate != runtime.TaskQueued || res.Validate != nil || res.Charge != nil {
		t.Errorf("a run not yet started: %+v, %v", res, err)
	}

	chain, err := wf.RegisterChain(h.Engine, &chainSteps{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := chain.Run(t.Context(), wf.ChainInput{Start: 1})
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := runtime.ParseRunID("00000000-0000-4000-8000-000000000000")
	if err != nil {
		t.Fatal(err)
	}
	for what, id := range map[string]runtime.RunID{"a chain run": other.ID, "an unknown id": unknown} {
		if _, err := orders.Result(t.Context(), id); !errors.Is(err, runtime.ErrRunNotFound) {
			t.Errorf("Result of %s = %v, want ErrRunNotFound", what, err)
		}
	}
	// Wait and WaitMany refuse a run of another workflow the same way.
	if _, err := orders.Wait(t.Context(), other.ID); !errors.Is(err, runtime.ErrRunNotFound) || !strings.Contains(err.Error(), "workflow chain") {
		t.Errorf("Wait of a chain run = %v, want ErrRunNotFound naming workflow chain", err)
	}
	if _, err := orders.WaitMany(t.Context(), []runtime.RunID{ref.ID, other.ID}); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("WaitMany with a chain run = %v, want ErrRunNotFound", err)
	}
}

func testRunMany(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &chainSteps{}
	client, err := wf.RegisterChain(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	// One invalid input refuses the whole batch, naming it.
	raw := []json.RawMessage{json.RawMessage(`{"start":1}`), json.RawMessage(`{"start":"two"}`)}
	if _, err := client.Workflow().TriggerMany(t.Context(), raw); !errors.Is(err, runtime.ErrInvalidInput) ||
		!strings.Contains(err.Error(), "input 1 of 2") || !strings.Contains(err.Error(), "input.start") {
		t.Fatalf("TriggerMany with a bad input = %v", err)
	}
	if n := h.RunUntilIdle(); n != 0 {
		t.Fatalf("%d tasks ran after a refused batch", n)
	}
	_, err = client.RunManyNoWait(t.Context(), []wf.ChainInput{{Start: 1}, {Start: 2}}, runtime.WithIdempotencyKey("k"))
	if err == nil || !strings.Contains(err.Error(), "WithIdempotencyKeys") {
		t.Fatalf("a batch with one idempotency key = %v; want it refused, pointing to WithIdempotencyKeys", err)
	}
	refs, err := client.RunManyNoWait(t.Context(), []wf.ChainInput{{Start: 1}, {Start: 2}, {Start: 3}}, runtime.WithTenant("bulk"))
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 3 || refs[0].ID == refs[1].ID {
		t.Fatalf("refs = %+v", refs)
	}
	h.RunUntilIdle()
	for i, ref := range refs {
		res, err := client.Wait(t.Context(), ref.ID)
		if err != nil || res.Third == nil || res.Third.Value != int64(i+4) {
			t.Errorf("run %d: %+v, %v", i, res.Third, err)
		}
		if r := h.Result(ref.ID); r.Tenant != "bulk" {
			t.Errorf("run %d tenant = %q", i, r.Tenant)
		}
	}
	if n := steps.calls.count("first"); n != 3 {
		t.Errorf("first ran %d times, want 3", n)
	}
}

// testRunManyKeys: WithIdempotencyKeys gives each input of a batch its
// own key, with the single-run key's semantics: a key an earlier run of
// the workflow and tenant holds returns that run (Existing) and creates
// nothing; the other inputs are created; an empty key is no key.
func testRunManyKeys(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &chainSteps{}
	client, err := wf.RegisterChain(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, acme := t.Context(), runtime.WithTenant("acme")
	single, err := client.RunNoWait(ctx, wf.ChainInput{Start: 100}, runtime.WithIdempotencyKey("order-2"), acme)
	if err != nil {
		t.Fatal(err)
	}
	first, err := client.RunManyNoWait(ctx, []wf.ChainInput{{Start: 1}, {Start: 2}, {Start: 3}},
		runtime.WithIdempotencyKeys("order-1", "order-2", ""), acme)
	if err != nil {
		t.Fatal(err)
	}
	if first[0].Existing || !first[1].Existing || first[1].ID != single.ID || first[2].Existing {
		t.Fatalf("first batch = %+v; want order-2 to return the single run %s, the others created", first, single.ID)
	}
	// A caller retrying the batch (and adding to it) gets the same runs.
	again, err := client.RunManyNoWait(ctx, []wf.ChainInput{{Start: 1}, {Start: 2}, {Start: 4}, {Start: 3}},
		runtime.WithIdempotencyKeys("order-1", "order-2", "order-4", ""), acme)
	if err != nil {
		t.Fatal(err)
	}
	if !again[0].Existing || again[0].ID != first[0].ID || !again[1].Existing || again[1].ID != single.ID ||
		again[2].Existing || again[3].Existing || again[3].ID == first[2].ID {
		t.Fatalf("second batch = %+v; want order-1 and order-2 existing, order-4 and the keyless input created", again)
	}
	// Keys are scoped to the tenant, as single keys are.
	other, err := client.RunManyNoWait(ctx, []wf.ChainInput{{Start: 1}}, runtime.WithIdempotencyKeys("order-1"), runtime.WithTenant("globex"))
	if err != nil || other[0].Existing || other[0].ID == first[0].ID {
		t.Fatalf("the same key under another tenant = %+v, %v; want a new run", other, err)
	}
	h.Settle()
	// single, order-1, the first keyless, order-4, the second keyless, globex's.
	if n := steps.calls.count("first"); n != 6 {
		t.Errorf("first ran %d times, want 6 (one per run created)", n)
	}
	for i, ref := range first {
		res, err := client.Wait(ctx, ref.ID)
		want := int64(i + 4)
		if ref.ID == single.ID {
			want = 103
		}
		if err != nil || res.Third == nil || res.Third.Value != want {
			t.Errorf("run %d: %+v, %v; want third = %d", i, res.Third, err, want)
		}
	}
}

// testRunManyKeysMisused: the ways to get keys wrong are refused before
// anything is written, each saying what to do instead.
func testRunManyKeysMisused(t *testing.T, newH newHarness) {
	h := newH(t)
	client, err := wf.RegisterChain(h.Engine, &chainSteps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	three := []wf.ChainInput{{Start: 1}, {Start: 2}, {Start: 3}}
	tests := []struct {
		name string
		call func() error
		want []string
	}{
		{"fewer keys than inputs", func() error {
			_, err := client.RunManyNoWait(ctx, three, runtime.WithIdempotencyKeys("a", "b"))
			return err
		}, []string{"chain", "2 idempotency keys", "3 inputs"}},
		{"more keys than inputs", func() error {
			_, err := client.RunManyNoWait(ctx, three[:1], runtime.WithIdempotencyKeys("a", "b"))
			return err
		}, []string{"2 idempotency keys", "1 input"}},
		{"a key twice", func() error {
			_, err := client.RunManyNoWait(ctx, three, runtime.WithIdempotencyKeys("a", "", "a"))
			return err
		}, []string{`"a"`, "inputs 0 and 2"}},
		{"one key for a batch", func() error {
			_, err := client.RunManyNoWait(ctx, three[:1], runtime.WithIdempotencyKey("a"))
			return err
		}, []string{"WithIdempotencyKeys"}},
		{"keys for one run", func() error {
			_, err := client.RunNoWait(ctx, three[0], runtime.WithIdempotencyKeys("a"))
			return err
		}, []string{"WithIdempotencyKeys", "TriggerMany", "WithIdempotencyKey"}},
		{"keys for Run", func() error {
			_, err := client.Run(ctx, three[0], runtime.WithIdempotencyKeys("a"))
			return err
		}, []string{"WithIdempotencyKeys", "TriggerMany"}},
	}
	for _, tt := range tests {
		err := tt.call()
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tt.name, err, w)
			}
		}
	}
	if n := h.RunUntilIdle(); n != 0 {
		t.Errorf("%d tasks ran after refused triggers", n)
	}
}

// --- outputs are checked against their schema --------------------------

// gradeSteps returns the verdict and score the input asks for, and a tag
// named by the label.
type gradeSteps struct {
	calls   calls
	failure runtime.Failure
}

func (s *gradeSteps) Grade(_ context.Context, in wf.GradesInput) (wf.GradesGradeOutput, error) {
	s.calls.add("grade")
	out := wf.GradesGradeOutput{Verdict: wf.GradesGradeOutputVerdict(in.Verdict), Score: in.Score}
	if in.Label != nil {
		out.Tags = []wf.GradesGradeOutputTagsItem{{Name: "first"}, {Name: *in.Label}}
	}
	return out, nil
}

func (s *gradeSteps) Publish(context.Context, wf.GradesInput, wf.GradesPublishParents) error {
	s.calls.add("publish")
	return nil
}

func (s *gradeSteps) Report(_ context.Context, _ wf.GradesInput, f runtime.Failure) error {
	s.calls.add("report")
	s.failure = f
	return nil
}

func testInvalidOutput(t *testing.T, newH newHarness) {
	empty := ""
	for _, tc := range []struct {
		name   string
		in     wf.GradesInput
		fields []string
	}{
		{"outside its enum", wf.GradesInput{Verdict: "maybe", Score: 3}, []string{"output.verdict"}},
		{"below its minimum", wf.GradesInput{Verdict: "pass", Score: -1}, []string{"output.score"}},
		{"both, and deep", wf.GradesInput{Verdict: "meh", Score: -1, Label: &empty}, []string{"output.score", "output.tags[1].name", "output.verdict"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newH(t)
			steps := &gradeSteps{}
			client, err := wf.RegisterGrades(h.Engine, steps)
			if err != nil {
				t.Fatal(err)
			}
			res, err := client.Run(t.Context(), tc.in)
			var re *runtime.RunFailedError
			if !errors.As(err, &re) || re.Step != "grade" {
				t.Fatalf("Run = %+v, %v; want the run failed at grade", res, err)
			}
			for _, field := range tc.fields {
				if !strings.Contains(re.Message, field+": ") {
					t.Errorf("failure %q does not name %s", re.Message, field)
				}
			}
			if !strings.HasPrefix(re.Message, "step grade returned an output that does not match its schema: ") {
				t.Errorf("failure %q does not say which step returned what", re.Message)
			}
			// Not retried, despite maxRetries: 2; the child never ran, and
			// the invalid output was not kept.
			if diff := cmp.Diff([]string{"grade", "report"}, steps.calls.list()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if res.Grade != nil {
				t.Errorf("the invalid output is readable: %+v", res.Grade)
			}
			if steps.failure.Step != "grade" {
				t.Errorf("the failure handler saw %+v", steps.failure)
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		h := newH(t)
		client, err := wf.RegisterGrades(h.Engine, &gradeSteps{})
		if err != nil {
			t.Fatal(err)
		}
		label := "x"
		res, err := client.Run(t.Context(), wf.GradesInput{Verdict: "pass", Score: 0, Label: &label})
		if err != nil || res.Grade == nil || len(res.Grade.Tags) != 2 {
			t.Fatalf("Run = %+v, %v", res, err)
		}
	})
}

// testRequiredInputNamed: a missing required property is reported at its
// own path, however deep.
func testRequiredInputNamed(t *testing.T, newH newHarness) {
	h := newH(t)
	w, err := h.Engine.Workflow(wf.GradesSpec())
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string][]string{
		`{}`:                                  {"input.score", "input.verdict"},
		`{"verdict":"x","score":1,"meta":{}}`: {"input.meta.seed"},
		`{"verdict":1,"score":1}`:             {"input.verdict"},
	} {
		_, err := w.Trigger(t.Context(), json.RawMessage(in))
		var ie *runtime.InputError
		if !errors.As(err, &ie) {
			t.Fatalf("%s: error = %v, want an *InputError", in, err)
		}
		var fields []string
		for _, p := range ie.Problems {
			fields = append(fields, p.Field)
		}
		if diff := cmp.Diff(want, fields); diff != "" {
			t.Errorf("%s: fields (-want +got):\n%s\n(%v)", in, diff, err)
		}
	}
}
