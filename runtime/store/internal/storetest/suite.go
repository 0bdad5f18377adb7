package storetest

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Run runs the whole conformance suite; newStore is called once per test.
func Run(t *testing.T, newStore Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f *fixture)
	}{
		{"Workflows", testWorkflows},
		{"CreateRunQueuesRoots", testCreateRunQueuesRoots},
		{"IdempotencyKey", testIdempotencyKey},
		{"CreateRunsInABatch", testCreateBatch},
		{"CreateRunsIdempotentByID", testCreateByID},
		{"CreateRunsKeysConcurrently", testCreateKeysConcurrently},
		{"ReadManyRuns", testReadManyRuns},
		{"EventTimesNeverGoBack", testEventTimesMonotonic},
		{"ClaimMarksRunning", testClaimMarksRunning},
		{"ClaimNeverTwice", testClaimNeverTwice},
		{"ClaimFiltersVersions", testClaimFiltersVersions},
		{"ClaimFiltersVersionsOfEveryQueuedTask", testClaimFiltersVersionsOfEveryQueuedTask},
		{"ClaimFiltersVersionsFairly", testClaimFiltersVersionsFairly},
		{"WorkflowVersions", testWorkflowVersions},
		{"FairAcrossTenants", testFairAcrossTenants},
		{"TenantConcurrencyLimit", testTenantLimit},
		{"RunPriority", testRunPriority},
		{"PriorityFirstWithinTenant", testPriorityFirst},
		{"LowPriorityNotStarved", testLowPriorityNotStarved},
		{"RunInProgressBeforeNewRuns", testInProgressFirst},
		{"FairAcrossTenantsWithPriorities", testFairWithPriorities},
		{"LimitHoldsBackTasksOfAKey", testLimitHolds},
		{"LimitSlotsGoBackWhenTasksEnd", testLimitReleased},
		{"LimitSlotKeptWhileRetryingOrRecovered", testLimitKept},
		{"LimitLineLosesCancelledRuns", testLimitLineCancelled},
		{"LimitAppliesToRetriedRuns", testLimitRetriedRun},
		{"RunLimitQueuesRunsOfAKey", testRunLimitQueue},
		{"RunLimitLineLosesEndedRuns", testRunLimitLineCancelled},
		{"RunLimitCancelInProgress", testRunLimitCancelInProgress},
		{"RunLimitCancelNewest", testRunLimitCancelNewest},
		{"RunLimitCreateConcurrently", testRunLimitCreateConcurrently},
		{"RunLimitRetriedRunTakesASlot", testRunLimitRetriedRun},
		{"DebounceLetsTheLastRunStart", testDebounceLastRuns},
		{"DebounceMaxWait", testDebounceMaxWait},
		{"DebounceRunCancelledWhileWaiting", testDebounceCancelledWhileWaiting},
		{"RatePacesStartsOfAKey", testRatePaces},
		{"RateBurstAfterQuietSpell", testRateBurst},
		{"RateTurnsInOrder", testRateLine},
		{"RateCountsRetries", testRateCountsRetries},
		{"RateCancelledWhilePutOff", testRateCancelled},
		{"CompletionResolvesChildrenAndRun", testCompletionResolves},
		{"FanInExactUnderConcurrency", testFanInConcurrent},
		{"HandOffGoesOnWithTheRun", testHandOffGoesOn},
		{"HandOffOnlyAtTheFront", testHandOffOnlyAtTheFront},
		{"HandOffNotLimited", testHandOffNotLimited},
		{"LabelsRouteClaims", testLabelsRouteClaims},
		{"LabelsKeptWhenQueuedAgain", testLabelsRequeued},
		{"LabelsRouteHandOffs", testLabelsHandOff},
		{"LabelsKeepFairnessForOthers", testLabelsFair},
		{"UnservedLabels", testUnserved},
		{"PauseHoldsClaims", testPauseHoldsClaims},
		{"PauseHoldsCappedClaims", testPauseHoldsCappedClaims},
		{"PauseHoldsHandOff", testPauseHoldsHandOff},
		{"SkippedParentsResolve", testSkippedParentsResolve},
		{"StaleResultsDropped", testStaleResults},
		{"FailureCancelsAndQueuesHandlerOnce", testFailure},
		{"RetryWaitsOnDurableTimer", testRetry},
		{"SleepAndWake", testSleep},
		{"SleepStepCompletesWhenItsTimerFires", testSleepStepCompletes},
		{"EventWakeTimes", testEventWakeTimes},
		{"Heartbeat", testHeartbeat},
		{"ReleaseTasks", testRelease},
		{"ReleaseCounted", testReleaseCounted},
		{"StuckTasks", testStuckTasks},
		{"QueueDepth", testQueueDepth},
		{"RunsKeepTraceContext", testTraceContext},
		{"ClaimSaysWhenQueued", testQueuedAt},
		{"FiredTimersSayWhenDue", testFiredTimers},
		{"RecoverRequeuesOrFails", testRecover},
		{"CancelRun", testCancel},
		{"RetryRunKeepsCompletedOutputs", testRetryRun},
		{"RerunReopensACompletedRun", testRerunCompleted},
		{"CancelAndRetryManyRuns", testCancelRetryMany},
		{"Leadership", testLeadership},
		{"ListenDeliversWakeups", testListen},
		{"Maintain", testMaintain},
		{"ListRuns", testListRuns},
		{"ListRunsFinishedSince", testListRunsFinished},
		{"ListRunsPages", testListRunsPages},
		{"ListRunsByInput", testListRunsByInput},
		{"ListRunsByOddInput", testListRunsByOddInput},
		{"ListRunsByIDPrefix", testListRunsByIDPrefix},
		{"ListRunsByKey", testListRunsByKey},
		{"RunsKeepTags", testRunsKeepTags},
		{"ListRunsByTags", testListRunsByTags},
		{"SpawnedRunsInheritTags", testSpawnInheritsTags},
		{"ListWorkers", testListWorkers},
		{"QueueStats", testQueueStats},
		{"QueueSteps", testQueueSteps},
		{"ListWorkflows", testListWorkflows},
		{"InFlight", testInFlight},
		{"RunActivity", testRunActivity},
		{"EventCounts", testEventCounts},
		{"PurgeByStatusAndAge", testPurgeByStatusAndAge},
		{"PurgeFilters", testPurgeFilters},
		{"PurgeKeepsLiveFailureHandler", testPurgeKeepsLiveHandler},
		{"PurgeDryRunAndLimit", testPurgeDryRunAndLimit},
		{"PurgeRacesRetry", testPurgeRacesRetry},
		{"SchedulePut", testSchedulePut},
		{"ScheduleNames", testScheduleNames},
		{"ScheduleDelete", testScheduleDelete},
		{"SchedulePause", testSchedulePause},
		{"SchedulePutConcurrently", testSchedulePutConcurrently},
		{"SpawnWaitsForEveryChild", testSpawnWaitsForEveryChild},
		{"SpawnNothing", testSpawnNothing},
		{"SpawnStale", testSpawnStale},
		{"AwaitThenSend", testAwaitThenSend},
		{"SendThenAwait", testSendThenAwait},
		{"AwaitDeadline", testAwaitDeadline},
		{"AwaitEndsWithRun", testAwaitEndsWithRun},
		{"SendToUnknownRun", testSendToUnknownRun},
		{"SendRacesAwait", testSendRacesAwait},
		{"PurgeEvents", testPurgeEvents},
		{"SendRepeat", testSendRepeat},
		{"ChildFailureWakesAtOnce", testChildFailureWakesAtOnce},
		{"ChildRunPreviews", testChildRunPreviews},
		{"ParentEndCancelsChildren", testParentEndCancelsChildren},
		{"ReleaseWokenParent", testReleaseWokenParent},
		{"DelayedRunStartsWhenDue", testDelayedStart},
		{"DeadlineFailsRunningRun", testDeadlineFails},
		{"RunTimerOfEndedRunDoesNothing", testRunTimerOfEndedRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newFixture(t, newStore))
		})
	}
}

func testWorkflows(t *testing.T, f *fixture) {
	w := store.WorkflowVersion{Version: "diamond@v1", Name: "diamond", Spec: []byte(`{"name":"diamond"}`), SavedAt: f.now}
	for range 2 { // saving twice is a no-op
		if err := f.s.SaveWorkflow(f.ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	got, err := f.s.LoadWorkflow(f.ctx, "diamond@v1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w, got); diff != "" {
		t.Errorf("LoadWorkflow (-want +got):\n%s", diff)
	}
	if _, err := f.s.LoadWorkflow(f.ctx, "nope@v1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LoadWorkflow(unknown) = %v, want ErrNotFound", err)
	}
}

func testCreateRunQueuesRoots(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{tenant: "acme"})
	r := f.run(id)
	if r.Status != store.RunRunning || r.Tenant != "acme" || r.Workflow != "diamond" || string(r.Input) != `{"n":1}` {
		t.Errorf("run = %+v", r)
	}
	want := []store.TaskStatus{store.TaskQueued, store.TaskPending, store.TaskPending, store.TaskPending, store.TaskPending}
	if diff := cmp.Diff(want, f.statuses(id)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a:QUEUED"}, f.events(id)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if _, err := f.s.GetRun(f.ctx, uuid.New()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun(unknown) = %v, want ErrNotFound", err)
	}
}

func testIdempotencyKey(t *testing.T, f *fixture) {
	first := f.create(runOpts{key: "order-7"})
	second := f.create(runOpts{key: "order-7"})
	if !first.Created || second.Created || second.ID != first.ID {
		t.Fatalf("first %+v, second %+v: want the second to return the first run", first, second)
	}
	other := f.create(runOpts{key: "order-7", tenant: "other"})
	if !other.Created {
		t.Error("the same key under another tenant should create a run")
	}
	if got := f.claim(10); len(got) != 2 {
		t.Errorf("claimed %d roots, want 2 (one per created run)", len(got))
	}
}

func testClaimMarksRunning(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{tenant: "acme"})
	c := f.claimOne(id, stepA)
	if c.Attempt != 1 || !c.Plain || c.Woken || c.Tenant != "acme" || c.Workflow != "diamond" ||
		c.Version != "diamond@v1" || string(c.Input) != `{"n":1}` {
		t.Errorf("claimed %+v", c)
	}
	if got := f.statuses(id)[stepA]; got != store.TaskRunning {
		t.Errorf("status = %s, want RUNNING", got)
	}
	if diff := cmp.Diff([]string{"a:QUEUED", "a:STARTED"}, f.events(id)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := f.claim(10); len(got) != 0 {
		t.Errorf("claimed %v from an empty queue", keys(got))
	}
	// A task that is not plain is started by StartTasks.
	f.complete(c, `{}`)
	cs := f.claim(10)
	var cTask store.ClaimedTask
	for _, x := range cs {
		if x.Key.Step == stepC {
			cTask = x
		}
	}
	if cTask.Plain {
		t.Fatal("step c is not plain but was claimed as plain")
	}
	if err := f.s.StartTasks(f.ctx, []store.Attempt{attempt(cTask)}, f.now); err != nil {
		t.Fatal(err)
	}
	if got := f.trail(id, stepC); !cmp.Equal(got, []store.EventType{store.EventQueued, store.EventStarted}) {
		t.Errorf("trail of c = %v", got)
	}
}

func testClaimNeverTwice(t *testing.T, f *fixture) {
	const runs = 200
	for range runs {
		f.createDiamond(runOpts{tenant: []string{"t1", "t2", "t3"}[len(f.now.String())%3]})
	}
	var mu sync.Mutex
	seen := map[store.TaskKey]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := f.s.ClaimTasks(f.ctx, store.Claim{Worker: string(rune('a' + w)), Limit: 7, Now: f.now})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, c := range got {
					seen[c.Key]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != runs {
		t.Errorf("claimed %d distinct tasks, want %d", len(seen), runs)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("task %v claimed %d times", k, n)
		}
	}
}

func testClaimFiltersVersions(t *testing.T, f *fixture) {
	mine := f.createDiamond(runOpts{workflow: "mine"})
	f.createDiamond(runOpts{workflow: "theirs"})
	older := f.createDiamond(runOpts{workflow: "mine", version: "mine@v0"})
	got := f.claim(10, func(c *store.Claim) { c.Versions = []string{"mine@v1"} })
	if len(got) != 1 || got[0].Key.Run != mine {
		t.Fatalf("claimed %v, want only the root of %s (not %s, of another version)", keys(got), mine, older)
	}
	got = f.claim(10, func(c *store.Claim) { c.Versions = []string{"mine@v0", "mine@v1"} })
	if len(got) != 1 || got[0].Key.Run != older || got[0].Version != "mine@v0" {
		t.Fatalf("claimed %v, want the root of %s, of version mine@v0", keys(got), older)
	}
	if got := f.claim(10); len(got) != 1 {
		t.Errorf("an unfiltered claim got %d tasks, want the other workflow's root", len(got))
	}
}

// Every way a task reaches the queue (a root, a child its parent's
// completion makes ready, a retry, a woken sleep, a task handed back, a
// run retried) carries its run's version: a claim of another version
// never takes it, one of its version does.
func testClaimFiltersVersionsOfEveryQueuedTask(t *testing.T, f *fixture) {
	other := func(c *store.Claim) { c.Versions = []string{"diamond@v2"} }
	mine := func(c *store.Claim) { c.Versions = []string{"diamond@v1"} }
	expect := func(what string, run uuid.UUID, steps ...int) store.ClaimedTask {
		t.Helper()
		if got := f.claim(10, other); len(got) != 0 {
			t.Fatalf("%s: a claim of diamond@v2 took %v", what, keys(got))
		}
		got := f.claim(10, mine)
		slices.SortFunc(got, func(a, b store.ClaimedTask) int { return a.Key.Step - b.Key.Step })
		var want []store.TaskKey
		for _, s := range steps {
			want = append(want, store.TaskKey{Run: run, Step: s})
		}
		if !slices.Equal(keys(got), want) {
			t.Fatalf("%s: a claim of diamond@v1 took %v, want %v", what, keys(got), want)
		}
		return got[0]
	}
	id := f.createDiamond(runOpts{maxAttempts: 3})
	a := expect("a root", id, stepA)
	f.tick(time.Second)
	f.complete(a, `{}`)
	b := expect("children made ready", id, stepB, stepC)

	// Handed back uncounted, queued again.
	if _, err := f.s.ReleaseTasks(f.ctx, store.Release{Worker: "w1", Attempts: []store.Attempt{attempt(b)}, Reason: "stopping", Now: f.now}); err != nil {
		t.Fatal(err)
	}
	b = expect("a task handed back", id, stepB)

	// A retry, queued by its timer.
	f.finish(store.Results{Now: f.now, Retries: []store.Retry{{Attempt: attempt(b), Error: "flaky", At: f.now.Add(time.Second)}}})
	f.tick(2 * time.Second)
	if _, err := f.fire(f.now, 10); err != nil {
		t.Fatal(err)
	}
	b = expect("a retry", id, stepB)

	// A sleep, woken by its timer.
	f.finish(store.Results{Now: f.now, Sleeps: []store.Sleep{{Attempt: attempt(b), For: time.Second}}})
	f.tick(2 * time.Second)
	if _, err := f.fire(f.now, 10); err != nil {
		t.Fatal(err)
	}
	expect("a woken sleep", id, stepB)

	// A run retried after it failed: its roots are queued again.
	id2 := f.createDiamond(runOpts{})
	a2 := expect("another root", id2, stepA)
	f.finish(store.Results{Now: f.now, Failures: []store.Failure{{Attempt: attempt(a2), Error: "boom"}}})
	f.claim(10, mine) // the failure handler
	if ok, err := f.retryOne(id2, f.now, store.ResetTask{Step: stepA}); err != nil || !ok {
		t.Fatalf("RetryRuns: %v, %v", ok, err)
	}
	expect("a run retried", id2, stepA)
}

// A claim of some versions takes their tasks in the queue's fair order:
// another tenant's backlog of a version it does not serve holds up none.
func testClaimFiltersVersionsFairly(t *testing.T, f *fixture) {
	for range 20 {
		f.createDiamond(runOpts{tenant: "B", version: "diamond@v2"})
	}
	for range 3 {
		f.createDiamond(runOpts{tenant: "B"})
	}
	a := f.createDiamond(runOpts{tenant: "A"})
	got := f.claim(2, func(c *store.Claim) { c.Versions = []string{"diamond@v1"} })
	if len(got) != 2 || !slices.ContainsFunc(got, func(c store.ClaimedTask) bool { return c.Key.Run == a }) {
		t.Fatalf("claimed %v, want one task of each tenant, the root of %s among them", keys(got), a)
	}
	for _, c := range got {
		if c.Version != "diamond@v1" {
			t.Errorf("claimed %v of version %s", c.Key, c.Version)
		}
	}
}

func testWorkflowVersions(t *testing.T, f *fixture) {
	for _, v := range []string{"b@2", "a@1", "b@1", "c@1"} {
		name, _, _ := strings.Cut(v, "@")
		if err := f.s.SaveWorkflow(f.ctx, store.WorkflowVersion{Version: v, Name: name, Spec: []byte(`{}`), SavedAt: f.now}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := f.s.WorkflowVersions(f.ctx, []string{"b", "a", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, w := range got {
		versions = append(versions, w.Version)
		if w.Spec != nil {
			t.Errorf("WorkflowVersions returned %s with its spec", w.Version)
		}
	}
	if want := []string{"a@1", "b@1", "b@2"}; !slices.Equal(versions, want) {
		t.Errorf("WorkflowVersions(b, a, nope) = %v, want %v", versions, want)
	}
}

func testFairAcrossTenants(t *testing.T, f *fixture) {
	// Tenant B queues a backlog; A then queues one task. A must be served
	// within the first couple of claims, not after B's backlog.
	for range 100 {
		f.createDiamond(runOpts{tenant: "B"})
	}
	a := f.createDiamond(runOpts{tenant: "A"})
	position := -1
	for i := range 100 {
		c := f.claim(1)
		if len(c) == 1 && c[0].Key.Run == a {
			position = i
			break
		}
	}
	if position < 0 || position > 1 {
		t.Errorf("tenant A's task was claimed at position %d, want 0 or 1", position)
	}

	// With both tenants backlogged, claims alternate.
	for range 10 {
		f.createDiamond(runOpts{tenant: "A"})
	}
	got := f.claim(6)
	tenants := make([]string, len(got))
	for i, c := range got {
		tenants[i] = c.Tenant
	}
	count := map[string]int{}
	for _, tn := range tenants {
		count[tn]++
	}
	if count["A"] != 3 || count["B"] != 3 {
		t.Errorf("six claims went to %v, want three each", tenants)
	}
}

func testTenantLimit(t *testing.T, f *fixture) {
	for range 3 {
		f.createDiamond(runOpts{tenant: "busy"})
	}
	quiet := f.createDiamond(runOpts{tenant: "quiet"})
	limit := func(c *store.Claim) { c.TenantLimit = 1 }
	got := f.claim(10, limit)
	if len(got) != 2 {
		t.Fatalf("claimed %d tasks with a limit of 1 per tenant, want 2 (one each)", len(got))
	}
	if got := f.claim(10, limit); len(got) != 0 {
		t.Fatalf("claimed %v while both tenants are at their limit", keys(got))
	}
	// Finishing busy's task frees its slot.
	for _, c := range got {
		if c.Key.Run != quiet {
			f.complete(c, `{}`)
		}
	}
	next := f.claim(10, limit)
	if len(next) != 1 || next[0].Tenant != "busy" {
		t.Errorf("after busy's task finished, claimed %v", keys(next))
	}
}

func testCompletionResolves(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{})
	a := f.claimOne(id, stepA)
	f.complete(a, `{"v":1}`)
	bc := f.claim(10)
	if diff := cmp.Diff([]int{stepB, stepC}, steps(bc)); diff != "" {
		t.Fatalf("after a, claimed (-want +got):\n%s", diff)
	}
	f.complete(bc[0], `{}`)
	if got := f.claim(10); len(got) != 0 {
		t.Fatalf("d was queued with one parent pending")
	}
	f.complete(bc[1], `{}`)
	d := f.claimOne(id, stepD)
	res := f.complete(d, `{"done":true}`)
	if !slices.Contains(res.Finished, id) {
		t.Errorf("Finished = %v, want the run", res.Finished)
	}
	r := f.run(id)
	if r.Status != store.RunCompleted || r.FinishedAt.IsZero() {
		t.Errorf("run = %s finished %v, want COMPLETED", r.Status, r.FinishedAt)
	}
	if a := f.task(id, stepA); string(a.Output) != `{"v":1}` || a.Status != store.TaskCompleted {
		t.Errorf("a = %+v", a)
	}
	// A claimed task comes with its parents' statuses and outputs.
	wantParents := []store.ParentOutput{{Step: stepA, Status: store.TaskCompleted, Output: []byte(`{"v":1}`)}}
	for _, c := range bc {
		if diff := cmp.Diff(wantParents, c.Parents); diff != "" {
			t.Errorf("parents of %s (-want +got):\n%s", stepNames[c.Key.Step], diff)
		}
	}
	if diff := cmp.Diff([]int{stepB, stepC}, parentSteps(d)); diff != "" {
		t.Errorf("parents of d (-want +got):\n%s", diff)
	}
	want := []store.TaskStatus{store.TaskCompleted, store.TaskCompleted, store.TaskCompleted, store.TaskCompleted, store.TaskPending}
	if diff := cmp.Diff(want, f.statuses(id)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if got := f.trail(id, stepD); !cmp.Equal(got, []store.EventType{store.EventQueued, store.EventStarted, store.EventCompleted}) {
		t.Errorf("trail of d = %v", got)
	}
}

func testFanInConcurrent(t *testing.T, f *fixture) {
	const runs = 30
	ids := make([]uuid.UUID, runs)
	for i := range ids {
		ids[i] = f.createDiamond(runOpts{})
	}
	for _, a := range f.claim(runs) {
		f.complete(a, `{}`)
	}
	bcs := f.claim(2 * runs)
	if len(bcs) != 2*runs {
		t.Fatalf("claimed %d of b and c, want %d", len(bcs), 2*runs)
	}
	// Complete every b and c at once, each in its own Finish call.
	var wg sync.WaitGroup
	for _, c := range bcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.s.Finish(f.ctx, store.Results{Now: f.now, Completions: []store.Completion{{
				Attempt: attempt(c), Output: []byte(`{}`), Children: diamondChildren[c.Key.Step],
			}}})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	ds := f.claim(10 * runs)
	if len(ds) != runs {
		t.Fatalf("claimed %d d tasks, want exactly %d (one per run)", len(ds), runs)
	}
	for _, id := range ids {
		queued := 0
		for _, ev := range f.events(id) {
			if ev == "d:QUEUED" {
				queued++
			}
		}
		if queued != 1 {
			t.Errorf("run %s: d queued %d times", id, queued)
		}
	}
}

func testSkippedParentsResolve(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{})
	f.complete(f.claimOne(id, stepA), `{}`)
	bc := f.claim(10)
	f.finish(store.Results{Completions: []store.Completion{
		{Attempt: attempt(bc[0]), Skipped: true, Detail: "skipIf true", Children: diamondChildren[bc[0].Key.Step]},
		{Attempt: attempt(bc[1]), Skipped: true, Detail: "skipIf true", Children: diamondChildren[bc[1].Key.Step]},
	}})
	d := f.claimOne(id, stepD)
	for _, p := range d.Parents {
		if p.Status != store.TaskSkipped || len(p.Output) != 0 {
			t.Errorf("parent %d: %s %q, want SKIPPED without output", p.Step, p.Status, p.Output)
		}
	}
	if len(d.Parents) != 2 {
		t.Errorf("d claimed with %d parents, want 2", len(d.Parents))
	}
	f.finish(store.Results{Completions: []store.Completion{{Attempt: attempt(d), Skipped: true, Detail: "all parents skipped"}}})
	if r := f.run(id); r.Status != store.RunCompleted {
		t.Errorf("run = %s, want COMPLETED (skipped steps count as resolved)", r.Status)
	}
	evs, _ := f.s.ListEvents(f.ctx, id)
	last := evs[len(evs)-1]
	if last.Type != store.EventSkipped || last.Detail != "all parents skipped" {
		t.Errorf("last event = %+v", last)
	}
}

func testStaleResults(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{})
	a := f.claimOne(id, stepA)
	old := attempt(a)
	old.Attempt = 99
	res := f.finish(store.Results{Completions: []store.Completion{{Attempt: old, Output: []byte(`{}`)}}})
	if len(res.Stale) != 1 {
		t.Fatalf("Stale = %v, want the wrong attempt", res.Stale)
	}
	if got := f.statuses(id)[stepA]; got != store.TaskRunning {
		t.Errorf("a = %s after a stale result, want RUNNING", got)
	}
}

func testFailure(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{})
	f.complete(f.claimOne(id, stepA), `{}`)
	bc := f.claim(10)
	// Both b and c fail at once: the first failure fails the run and
	// cancels the other, whose own failure then arrives stale. The run
	// fails once and the handler is queued once.
	res := f.finish(store.Results{Failures: []store.Failure{
		{Attempt: attempt(bc[0]), Error: "boom", TimedOut: true},
		{Attempt: attempt(bc[1]), Error: "boom too"},
	}})
	if !cmp.Equal(res.Finished, []uuid.UUID{id}) {
		t.Errorf("Finished = %v, want the run once", res.Finished)
	}
	if !cmp.Equal(res.Stale, []store.Attempt{attempt(bc[1])}) {
		t.Errorf("Stale = %v, want the second failure", res.Stale)
	}
	r := f.run(id)
	if r.Status != store.RunFailed || r.Failure == nil || *r.Failure != (store.RunFailure{StepIndex: bc[0].Key.Step, Error: "boom"}) {
		t.Errorf("run = %s failure %+v", r.Status, r.Failure)
	}
	st := f.statuses(id)
	if st[bc[1].Key.Step] != store.TaskCancelled || st[stepD] != store.TaskCancelled || st[stepH] != store.TaskQueued {
		t.Errorf("statuses = %v; want the other parent and d CANCELLED, h QUEUED", st)
	}
	for i, c := range bc {
		want := []store.EventType{store.EventQueued}
		if c.Plain {
			want = append(want, store.EventStarted)
		}
		if i == 0 {
			want = append(want, store.EventTimedOut, store.EventFailed)
		} else {
			want = append(want, store.EventCancelled)
		}
		if diff := cmp.Diff(want, f.trail(id, c.Key.Step)); diff != "" {
			t.Errorf("trail of %s (-want +got):\n%s", stepNames[c.Key.Step], diff)
		}
	}
	h := f.claim(10)
	if len(h) != 1 || h[0].Key.Step != stepH || h[0].Kind != store.KindOnFailure || h[0].FailedStep != bc[0].Key.Step || h[0].Error != "boom" {
		t.Fatalf("claimed %+v, want the failure handler with the failure", h)
	}
	// The handler's own result does not touch the failed run.
	f.finish(store.Results{Completions: []store.Completion{{Attempt: attempt(h[0])}}})
	if r := f.run(id); r.Status != store.RunFailed {
		t.Errorf("run = %s after the handler completed, want FAILED", r.Status)
	}
	if got := f.trail(id, stepD); !cmp.Equal(got, []store.EventType{store.EventCancelled}) {
		t.Errorf("trail of d = %v, want [CANCELLED]", got)
	}
}

func testRetry(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{maxAttempts: 3})
	a := f.claimOne(id, stepA)
	at := f.now.Add(time.Minute)
	f.finish(store.Results{Retries: []store.Retry{{Attempt: attempt(a), Error: "flaky", At: at}}})
	if st := f.statuses(id)[stepA]; st != store.TaskRetrying {
		t.Fatalf("a = %s, want RETRYING", st)
	}
	next, ok, err := f.s.NextTimer(f.ctx)
	if err != nil || !ok || !next.Equal(at) {
		t.Fatalf("NextTimer = %v %v %v, want %v", next, ok, err, at)
	}
	if n, _ := f.fire(at.Add(-time.Second), 100); n != 0 {
		t.Fatalf("fired %d timers early", n)
	}
	if got := f.claim(10); len(got) != 0 {
		t.Fatalf("a retrying task was claimable during its backoff")
	}
	if n, err := f.fire(at, 100); n != 1 || err != nil {
		t.Fatalf("FireTimers at due time = %d, %v", n, err)
	}
	if n, _ := f.fire(at, 100); n != 0 {
		t.Fatal("a timer fired twice")
	}
	f.now = at
	again := f.claimOne(id, stepA)
	if again.Attempt != 2 {
		t.Errorf("second attempt numbered %d", again.Attempt)
	}
	want := []store.EventType{store.EventQueued, store.EventStarted, store.EventRetrying, store.EventQueued, store.EventStarted}
	if diff := cmp.Diff(want, f.trail(id, stepA)); diff != "" {
		t.Errorf("trail (-want +got):\n%s", diff)
	}
	if _, ok, _ := f.s.NextTimer(f.ctx); ok {
		t.Error("a timer is still pending")
	}
}

func testSleep(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{})
	a := f.claimOne(id, stepA)
	until := f.now.Add(24 * time.Hour)
	f.finish(store.Results{Sleeps: []store.Sleep{{Attempt: attempt(a), For: 24 * time.Hour}}})
	tasks, _ := f.s.ListTasks(f.ctx, id)
	if tasks[stepA].Status != store.TaskSleeping || !tasks[stepA].WakeAt.Equal(until) {
		t.Fatalf("a = %s until %v", tasks[stepA].Status, tasks[stepA].WakeAt)
	}
	if n, _ := f.fire(until.Add(-time.Nanosecond), 10); n != 0 {
		t.Fatal("woke early")
	}
	if n, _ := f.fire(until.Add(time.Hour), 10); n != 1 {
		t.Fatal("did not wake")
	}
	woken := f.claimOne(id, stepA)
	if !woken.Woken || woken.Attempt != a.Attempt || woken.Plain {
		t.Errorf("woken claim = %+v", woken)
	}
	f.finish(store.Results{Completions: []store.Completion{{Attempt: attempt(woken), Woken: true, Children: diamondChildren[stepA]}}})
	want := []store.EventType{store.EventQueued, store.EventStarted, store.EventSleeping, store.EventWoken, store.EventCompleted}
	if diff := cmp.Diff(want, f.trail(id, stepA)); diff != "" {
		t.Errorf("trail (-want +got):\n%s", diff)
	}
	if got := f.claim(10); len(got) != 2 {
		t.Errorf("children queued after waking: %d, want 2", len(got))
	}
}

// testSleepStepCompletes: a sleep step (KindSleep) completes when its
// timer fires, with no claim: WOKEN then COMPLETED, its children queued;
// a run that ends with a sleep step completes there, once, with its
// RunFinished notification; and a sleep step whose run was cancelled
// while it slept does not wake.
func testSleepStepCompletes(t *testing.T, f *fixture) {
	notes, err := f.s.Listen(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// nap -> {b, c}; c -> rest (a sleep step that ends the run).
	tasks := []store.NewTask{
		{Step: 0, Kind: store.KindSleep, MaxAttempts: 1},
		{Step: 1, Kind: store.KindCode, Parents: []int{0}, Pending: 1, Plain: true, MaxAttempts: 1},
		{Step: 2, Kind: store.KindCode, Parents: []int{0}, Pending: 1, Plain: true, MaxAttempts: 1},
		{Step: 3, Kind: store.KindSleep, Parents: []int{2}, Pending: 1, MaxAttempts: 1},
	}
	create := func() uuid.UUID {
		id := uuid.Must(uuid.NewV7())
		if _, err := f.s.CreateRuns(f.ctx, store.CreateRuns{Now: f.now, Runs: []store.NewRun{{
			ID: id, Workflow: "naps", Version: "naps@v1", Tenant: "default", Input: []byte(`{}`), Tasks: tasks,
		}}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	sleep := func(c store.ClaimedTask) {
		f.finish(store.Results{Sleeps: []store.Sleep{{Attempt: attempt(c), For: time.Hour}}})
	}
	id, cancelled := create(), create()
	sleep(f.claimOne(id, 0))
	sleep(f.claimOne(cancelled, 0))
	if _, err := f.s.CancelRuns(f.ctx, []uuid.UUID{cancelled}, f.now); err != nil {
		t.Fatal(err)
	}
	fired, err := f.s.FireTimers(f.ctx, f.tick(2*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.FiredTimer{{Key: store.TaskKey{Run: id, Step: 0}, Sleep: true, Completed: true,
		Workflow: "naps", Version: "naps@v1", Tenant: "default"}}
	if diff := cmp.Diff(want, fired, cmpopts.IgnoreFields(store.FiredTimer{}, "Due")); diff != "" {
		t.Fatalf("fired (-want +got):\n%s", diff)
	}
	trail := []store.EventType{store.EventQueued, store.EventSleeping, store.EventWoken, store.EventCompleted}
	if diff := cmp.Diff(trail, f.trail(id, 0)); diff != "" {
		t.Errorf("trail of the sleep step (-want +got):\n%s", diff)
	}
	if got := f.claim(10); len(got) != 2 || got[0].Key.Run != id || got[1].Key.Run != id {
		t.Fatalf("claimed %+v, want the sleep step's two children", got)
	} else {
		r := store.Results{Now: f.now}
		for _, c := range got {
			r.Completions = append(r.Completions, store.Completion{Attempt: attempt(c), Children: map[int][]int{2: {3}}[c.Key.Step]})
		}
		f.finish(r)
	}
	sleep(f.claimOne(id, 3))
	fired, err = f.s.FireTimers(f.ctx, f.tick(2*time.Hour), 10)
	if err != nil || len(fired) != 1 || !fired[0].Completed || !fired[0].RunFinished {
		t.Fatalf("firing the last sleep = %+v, %v; want it completed and its run finished", fired, err)
	}
	if run, err := f.s.GetRun(f.ctx, id); err != nil || run.Status != store.RunCompleted {
		t.Fatalf("run = %+v, %v; want COMPLETED", run, err)
	}
	for deadline := time.After(10 * time.Second); ; {
		var n store.Notification
		select {
		case n = <-notes:
		case <-deadline:
			t.Fatal("no RunFinished notification for the run its sleep step completed")
		}
		if n.Kind == store.RunFinished && n.Run == id {
			break
		}
	}
	if got := f.claim(10); len(got) != 0 {
		t.Errorf("claimed %+v after the run completed", got)
	}
}

func testHeartbeat(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{})
	a := f.claimOne(id, stepA)
	claimedAt := f.now
	held, err := f.s.Heartbeat(f.ctx, "w1", f.tick(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Lease{{Attempt: attempt(a), ClaimedAt: claimedAt}}
	if diff := cmp.Diff(want, held, cmpTimes); diff != "" {
		t.Errorf("leases of w1 (-want +got):\n%s", diff)
	}
	if held, _ := f.s.Heartbeat(f.ctx, "w2", f.now); len(held) != 0 {
		t.Errorf("w2 holds %v, want nothing", held)
	}
	// The worker's fresh heartbeat keeps its task from being recovered,
	// although the task was claimed long ago.
	f.tick(time.Hour)
	if _, err := f.s.Heartbeat(f.ctx, "w1", f.now); err != nil {
		t.Fatal(err)
	}
	res, err := f.s.RecoverTasks(f.ctx, store.Recover{StaleBefore: f.now.Add(-time.Second), Limit: 10, Now: f.now})
	if err != nil || len(res.Requeued)+len(res.Failed) != 0 {
		t.Errorf("RecoverTasks = %+v, %v; want nothing", res, err)
	}
	// Once the worker falls silent, its task is recovered.
	res, err = f.s.RecoverTasks(f.ctx, store.Recover{StaleBefore: f.tick(time.Minute), Limit: 10, Now: f.now})
	if err != nil || !cmp.Equal(res.Failed, []store.Attempt{attempt(a)}) {
		t.Errorf("RecoverTasks after silence = %+v, %v; want a failed (out of attempts)", res, err)
	}
	if held, _ := f.s.Heartbeat(f.ctx, "w1", f.now); len(held) != 0 {
		t.Errorf("w1 still holds %v after its task was recovered", held)
	}
}

func testRecover(t *testing.T, f *fixture) {
	retryable := f.createDiamond(runOpts{maxAttempts: 2})
	a := f.claimOne(retryable, stepA)
	stale := store.Recover{StaleBefore: f.tick(time.Minute), Limit: 10, Now: f.now}
	res, err := f.s.RecoverTasks(f.ctx, stale)
	if err != nil || !cmp.Equal(res.Requeued, []store.Attempt{attempt(a)}) {
		t.Fatalf("RecoverTasks = %+v, %v; want a requeued", res, err)
	}
	again := f.claimOne(retryable, stepA)
	if again.Attempt != 2 {
		t.Errorf("recovered attempt numbered %d, want 2", again.Attempt)
	}
	// The first worker's late result is dropped.
	if r := f.complete(a, `{}`); len(r.Stale) != 1 {
		t.Errorf("late result of the dead worker was applied")
	}
	// Out of attempts: the task fails and so does the run.
	res, err = f.s.RecoverTasks(f.ctx, store.Recover{StaleBefore: f.tick(time.Minute), Limit: 10, Now: f.now})
	if err != nil || !cmp.Equal(res.Failed, []store.Attempt{attempt(again)}) {
		t.Fatalf("RecoverTasks = %+v, %v; want a failed", res, err)
	}
	r := f.run(retryable)
	if r.Status != store.RunFailed || r.Failure == nil || r.Failure.StepIndex != stepA {
		t.Errorf("run = %s failure %+v, want FAILED at a", r.Status, r.Failure)
	}
	want := []store.EventType{store.EventQueued, store.EventStarted, store.EventRetrying, store.EventQueued, store.EventStarted, store.EventFailed}
	if diff := cmp.Diff(want, f.trail(retryable, stepA)); diff != "" {
		t.Errorf("trail (-want +got):\n%s", diff)
	}
}

func testCancel(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{})
	a := f.claimOne(id, stepA)
	ok, err := f.cancelOne(id, f.now)
	if err != nil || !ok {
		t.Fatalf("CancelRuns = %v, %v", ok, err)
	}
	for i, st := range f.statuses(id) {
		if st != store.TaskCancelled {
			t.Errorf("step %d = %s, want CANCELLED", i, st)
		}
	}
	if r := f.run(id); r.Status != store.RunCancelled {
		t.Errorf("run = %s", r.Status)
	}
	if r := f.complete(a, `{}`); len(r.Stale) != 1 {
		t.Error("a cancelled task's result was applied")
	}
	if ok, _ := f.cancelOne(id, f.now); ok {
		t.Error("cancelling twice reported a change")
	}
	// A queued task of a cancelled run is never claimed.
	queued := f.createDiamond(runOpts{})
	if _, err := f.cancelOne(queued, f.now); err != nil {
		t.Fatal(err)
	}
	if got := f.claim(10); len(got) != 0 {
		t.Errorf("claimed %v of a cancelled run", keys(got))
	}
	if ok, err := f.cancelOne(uuid.New(), f.now); ok || err != nil {
		t.Errorf("cancelling an unknown run = %v, %v; want false, nil", ok, err)
	}
}

// testCancelRetryMany cancels and retries runs in every state in one call
// each: only the running ones are cancelled and only the failed and
// cancelled ones retried, each once however often given, and the rest are
// left exactly as they were.
func testCancelRetryMany(t *testing.T, f *fixture) {
	running := f.createDiamond(runOpts{tenant: "globex", workflow: "other"})
	f.claimOne(running, stepA)
	done := f.doneRun(runOpts{})
	failed := f.failRun(runOpts{}, true)
	queued := f.createDiamond(runOpts{tenant: "acme"})
	unknown := uuid.New()
	sorted := func(ids ...uuid.UUID) []uuid.UUID {
		slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
		return ids
	}
	before := map[uuid.UUID][]store.TaskStatus{done: f.statuses(done), failed: f.statuses(failed)}

	got, err := f.s.CancelRuns(f.ctx, []uuid.UUID{failed, queued, unknown, running, queued, done}, f.now)
	if err != nil {
		t.Fatal(err)
	}
	var want []store.CancelledRun
	for _, id := range sorted(queued, running) {
		r := f.run(id)
		want = append(want, store.CancelledRun{ID: id, Workflow: r.Workflow, Tenant: r.Tenant})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CancelRuns (-want +got):\n%s", diff)
	}
	for _, id := range []uuid.UUID{queued, running} {
		if r := f.run(id); r.Status != store.RunCancelled {
			t.Errorf("run %s = %s, want CANCELLED", id, r.Status)
		}
		for i, st := range f.statuses(id) {
			if st != store.TaskCancelled {
				t.Errorf("run %s step %d = %s, want CANCELLED", id, i, st)
			}
		}
	}
	if r := f.run(done); r.Status != store.RunCompleted {
		t.Errorf("completed run = %s after CancelRuns", r.Status)
	}
	if r := f.run(failed); r.Status != store.RunFailed {
		t.Errorf("failed run = %s after CancelRuns", r.Status)
	}
	for id, sts := range before {
		if diff := cmp.Diff(sts, f.statuses(id)); diff != "" {
			t.Errorf("CancelRuns changed the tasks of ended run %s (-before +after):\n%s", id, diff)
		}
	}
	if c := f.claim(10); len(c) != 0 {
		t.Fatalf("claimed %v of cancelled runs", keys(c))
	}

	all := []store.ResetTask{{Step: stepA}, {Step: stepB, Pending: 1}, {Step: stepC, Pending: 1}, {Step: stepD, Pending: 2}, {Step: stepH}}
	retry := func(id uuid.UUID) store.RetryRun { return store.RetryRun{Run: id, Reset: all} }
	reopened, err := f.s.RetryRuns(f.ctx, store.RetryRuns{Now: f.now, Runs: []store.RetryRun{
		retry(done), retry(queued), retry(unknown), retry(failed), retry(running), retry(queued),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sorted(queued, running, failed), reopened); diff != "" {
		t.Errorf("RetryRuns (-want +got):\n%s", diff)
	}
	for _, id := range []uuid.UUID{queued, running, failed} {
		if r := f.run(id); r.Status != store.RunRunning {
			t.Errorf("run %s = %s after RetryRuns, want RUNNING", id, r.Status)
		}
	}
	if r := f.run(done); r.Status != store.RunCompleted {
		t.Errorf("completed run = %s after RetryRuns", r.Status)
	}
	claimed := f.claim(10)
	var runs []uuid.UUID
	for _, c := range claimed {
		if c.Key.Step != stepA {
			t.Errorf("claimed step %d of %s, want only first steps", c.Key.Step, c.Key.Run)
		}
		runs = append(runs, c.Key.Run)
	}
	if diff := cmp.Diff(sorted(queued, running, failed), sorted(runs...)); diff != "" {
		t.Errorf("claimed after RetryRuns (-want +got):\n%s", diff)
	}
	if got, err := f.s.CancelRuns(f.ctx, nil, f.now); err != nil || len(got) != 0 {
		t.Errorf("CancelRuns(nothing) = %v, %v", got, err)
	}
	if got, err := f.s.RetryRuns(f.ctx, store.RetryRuns{Now: f.now}); err != nil || len(got) != 0 {
		t.Errorf("RetryRuns(nothing) = %v, %v", got, err)
	}
}

func testRetryRun(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{maxAttempts: 1})
	f.complete(f.claimOne(id, stepA), `{"kept":true}`)
	bc := f.claim(10)
	f.complete(bc[0], `{"b":1}`)
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(bc[1]), Error: "boom"}}})
	if ok, _ := f.retryOne(id, f.now); !ok {
		t.Fatal("RetryRuns refused a failed run")
	}
	// The run is running again: retrying it again is refused.
	if ok, _ := f.retryOne(id, f.now); ok {
		t.Fatal("RetryRuns accepted a running run")
	}
	if h := f.claim(10); len(h) != 1 || h[0].Key.Step != stepH {
		t.Fatalf("claimed %v, want the first run's failure handler", keys(h))
	}

	id = f.createDiamond(runOpts{maxAttempts: 1})
	f.complete(f.claimOne(id, stepA), `{"kept":true}`)
	bc = f.claim(10)
	failed := bc[1].Key.Step
	f.complete(bc[0], `{"b":1}`)
	f.finish(store.Results{Failures: []store.Failure{{Attempt: attempt(bc[1]), Error: "boom"}}})
	ok, err := f.retryOne(id, f.now, store.ResetTask{Step: failed, Pending: 0}, store.ResetTask{Step: stepD, Pending: 1}, store.ResetTask{Step: stepH})
	if err != nil || !ok {
		t.Fatalf("RetryRuns = %v, %v", ok, err)
	}
	r := f.run(id)
	if r.Status != store.RunRunning || r.Failure != nil {
		t.Errorf("run after retry = %+v", r)
	}
	again := f.claimOne(id, failed)
	if again.Attempt-again.PriorAttempts != 1 {
		t.Errorf("retried task's attempt in this try = %d, want 1", again.Attempt-again.PriorAttempts)
	}
	f.complete(again, `{}`)
	f.complete(f.claimOne(id, stepD), `{}`)
	if r := f.run(id); r.Status != store.RunCompleted {
		t.Errorf("run = %s, want COMPLETED", r.Status)
	}
	if a := f.task(id, stepA); string(a.Output) != `{"kept":true}` {
		t.Errorf("a's output after retry = %s", a.Output)
	}
}

// testRerunCompleted reruns a completed diamond from b: b and d run
// again, a and c keep their outputs, and only a rerun (From set) reopens a
// completed run.
func testRerunCompleted(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{maxAttempts: 1})
	f.complete(f.claimOne(id, stepA), `{"kept":true}`)
	for _, c := range f.claim(10) {
		f.complete(c, `{"first":true}`)
	}
	f.complete(f.claimOne(id, stepD), `{"first":true}`)
	if r := f.run(id); r.Status != store.RunCompleted || !r.RerunAt.IsZero() {
		t.Fatalf("run = %s (rerun at %v), want COMPLETED, never rerun", r.Status, r.RerunAt)
	}
	reset := []store.ResetTask{{Step: stepB, Pending: 0}, {Step: stepD, Pending: 1}}
	if ok, _ := f.retryOne(id, f.now, reset...); ok {
		t.Fatal("RetryRuns without From reopened a completed run")
	}
	at := f.tick(time.Minute)
	got, err := f.s.RetryRuns(f.ctx, store.RetryRuns{Now: at, Runs: []store.RetryRun{{Run: id, Reset: reset, From: "b"}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("RetryRuns from b = %v, %v; want the run reopened", got, err)
	}
	if r := f.run(id); r.Status != store.RunRunning || !r.RerunAt.Equal(at) || !r.FinishedAt.IsZero() {
		t.Errorf("run after the rerun = %s, rerun at %v, finished %v; want RUNNING, rerun at %v", r.Status, r.RerunAt, r.FinishedAt, at)
	}
	b := f.claimOne(id, stepB)
	if b.Attempt != 2 || b.Attempt-b.PriorAttempts != 1 {
		t.Errorf("b's rerun attempt = %d (%d in this try), want 2 (1)", b.Attempt, b.Attempt-b.PriorAttempts)
	}
	if got := f.claim(10); len(got) != 0 {
		t.Errorf("claimed %v beside b: d waits for it", keys(got))
	}
	f.complete(b, `{"second":true}`)
	d := f.claimOne(id, stepD)
	f.complete(d, `{"second":true}`)
	if r := f.run(id); r.Status != store.RunCompleted {
		t.Errorf("run = %s after the rerun's steps, want COMPLETED", r.Status)
	}
	for step, want := range map[int]string{stepA: `{"kept":true}`, stepC: `{"first":true}`, stepD: `{"second":true}`} {
		if got := f.task(id, step); string(got.Output) != want {
			t.Errorf("step %d output = %s, want %s", step, got.Output, want)
		}
	}
	evs, err := f.s.ListEvents(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, ev := range evs {
		if ev.Detail == "rerun from b" {
			said = append(said, stepNames[ev.StepIndex]+":"+string(ev.Type)+":"+strconv.Itoa(ev.Attempt))
		}
	}
	if diff := cmp.Diff([]string{"b:QUEUED:1"}, said); diff != "" {
		t.Errorf("events saying the rerun (-want +got):\n%s", diff)
	}
}

func testLeadership(t *testing.T, f *fixture) {
	one, two := f.s.Leadership("one"), f.s.Leadership("two")
	if ok, err := one.TryLead(f.ctx); err != nil || !ok {
		t.Fatalf("one.TryLead = %v, %v", ok, err)
	}
	if ok, _ := one.TryLead(f.ctx); !ok {
		t.Error("the leader lost leadership by asking again")
	}
	if ok, _ := two.TryLead(f.ctx); ok {
		t.Fatal("two leaders")
	}
	if err := one.Resign(f.ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _ := two.TryLead(f.ctx); !ok {
		t.Error("leadership not taken over after resigning")
	}
	_ = two.Resign(f.ctx)
}

func testListen(t *testing.T, f *fixture) {
	notes, err := f.s.Listen(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := f.createDiamond(runOpts{})
	wait := func(kind store.NotificationKind) store.Notification {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case n := <-notes:
				if n.Kind == kind {
					return n
				}
			case <-deadline:
				t.Fatalf("no notification of kind %d", kind)
			}
		}
	}
	wait(store.TasksReady)
	if _, err := f.cancelOne(id, f.now); err != nil {
		t.Fatal(err)
	}
	if n := wait(store.RunFinished); n.Run != id {
		t.Errorf("RunFinished for %s, want %s", n.Run, id)
	}
	// A claim that puts a task off by its rate limit sets a timer, which
	// the leader, asleep until a later one perhaps, must hear of.
	perMinute := store.Rate{Key: "k", Interval: time.Minute, Burst: 1}
	f.createDiamond(runOpts{rate: perMinute})
	f.createDiamond(runOpts{rate: perMinute})
	if got := len(f.claim(10)); got != 1 {
		t.Fatalf("claimed %d tasks, want 1 (the other put off)", got)
	}
	wait(store.TimerSet)
}

func testCreateBatch(t *testing.T, f *fixture) {
	first := f.create(runOpts{key: "k1"})
	newRun := func(tenant, key string) store.NewRun {
		return store.NewRun{
			ID: uuid.Must(uuid.NewV7()), Workflow: "diamond", Version: "diamond@v1", Tenant: tenant,
			IdempotencyKey: key, Input: []byte(`{}`), Tasks: diamondTasks(1),
		}
	}
	batch := []store.NewRun{newRun("default", ""), newRun("default", "k1"), newRun("other", "k2")}
	res, err := f.s.CreateRuns(f.ctx, store.CreateRuns{Runs: batch, Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.CreateRunResult{{ID: batch[0].ID, Created: true}, {ID: first.ID}, {ID: batch[2].ID, Created: true}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if got := f.claim(10); len(got) != 3 {
		t.Errorf("claimed %d roots, want 3 (the first run and two new ones)", len(got))
	}
	if r := f.run(batch[2].ID); r.Tenant != "other" || r.IdempotencyKey != "k2" {
		t.Errorf("run = %+v", r)
	}
	if _, err := f.s.GetRun(f.ctx, batch[1].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the run whose key was taken exists: %v", err)
	}
}

func parentSteps(c store.ClaimedTask) []int {
	out := make([]int, len(c.Parents))
	for i, p := range c.Parents {
		out[i] = p.Step
	}
	return out
}

func testMaintain(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{})
	f.complete(f.claimOne(id, stepA), `{}`)
	if err := f.s.Maintain(f.ctx, f.now); err != nil {
		t.Fatalf("Maintain: %v", err)
	}
	// Maintenance changes nothing a caller can see.
	if got := f.claim(10); len(got) != 2 {
		t.Errorf("after Maintain, claimed %d tasks, want b and c", len(got))
	}
}
