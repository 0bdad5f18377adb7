package dag

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

func orderWorkflow() *spec.Workflow {
	return &spec.Workflow{
		Name: "orders",
		Steps: []spec.Step{
			{Name: "validate"},
			{Name: "charge", Parents: []string{"validate"}, SkipIf: []string{"true"}},
			{Name: "reject", Parents: []string{"validate"}, SkipIf: []string{"true"}},
			{Name: "fraud-window", Sleep: 24 * time.Hour, Parents: []string{"charge"}},
			{Name: "prepare-shipment", Parents: []string{"charge"}},
			{Name: "ship", Parents: []string{"fraud-window", "prepare-shipment"}},
			{Name: "finalize", Parents: []string{"ship", "reject"}},
		},
		OnFailure: &spec.OnFailure{Name: "notify-admin"},
	}
}

func TestBuildLinksChildrenAndStaticSkips(t *testing.T) {
	g, err := Build(orderWorkflow())
	if err != nil {
		t.Fatal(err)
	}
	children := map[string][]int{}
	maySkip := map[string]bool{}
	for _, s := range g.Steps {
		children[s.Name] = s.Children
		maySkip[s.Name] = s.MaySkip
	}
	if diff := cmp.Diff([]int{1, 2}, children["validate"]); diff != "" {
		t.Errorf("validate children (-want +got):\n%s", diff)
	}
	want := map[string]bool{
		"validate": false, "charge": true, "reject": true, "fraud-window": true,
		"prepare-shipment": true, "ship": true, "finalize": true, "notify-admin": false,
	}
	if diff := cmp.Diff(want, maySkip); diff != "" {
		t.Errorf("MaySkip (-want +got):\n%s", diff)
	}
	if s, _ := g.Step("validate"); !s.Plain() {
		t.Error("validate should be plain")
	}
	if s, ok := g.OnFailure(); !ok || s.Name != "notify-admin" {
		t.Errorf("OnFailure = %v, %v", s, ok)
	}
}

func TestBuildReportsEveryProblem(t *testing.T) {
	_, err := Build(&spec.Workflow{Name: "w", Steps: []spec.Step{
		{Name: "a", Parents: []string{"a"}},
		{Name: "b", Parents: []string{"nope"}},
		{Name: "b"},
		{Name: "c", Retry: spec.RetryPolicy{MaxRetries: -1, InitialDelay: time.Second, BackoffFactor: 1, MaxDelay: time.Second}},
	}})
	if err == nil {
		t.Fatal("Build succeeded")
	}
	for _, want := range []string{
		`step "a": parents[0]: a step cannot be its own parent`,
		`step "b": parents[0]: unknown parent "nope"`,
		`step "b": name: step name "b" is used twice`,
		`step "c": retry.maxRetries: maxRetries -1 is negative`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestBuildPutsTheFailureHandlerLast(t *testing.T) {
	g, err := Build(orderWorkflow())
	if err != nil {
		t.Fatal(err)
	}
	last := g.Steps[len(g.Steps)-1]
	if last.Name != "notify-admin" || last.Kind != store.KindOnFailure || len(last.Parents) != 0 {
		t.Errorf("last step = %+v, want the failure handler without parents", last)
	}
	if s, ok := g.Step("fraud-window"); !ok || s.Kind != store.KindSleep || s.Sleep != 24*time.Hour {
		t.Errorf("fraud-window = %+v, want a 24h sleep", s)
	}
}

func TestBackoffSchedule(t *testing.T) {
	p := spec.RetryPolicy{MaxRetries: 5, InitialDelay: time.Second, BackoffFactor: 2, MaxDelay: 5 * time.Second}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, backoff(p, n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Backoff (-want +got):\n%s", diff)
	}
	if d := backoff(spec.RetryPolicy{InitialDelay: time.Hour, BackoffFactor: 10, MaxDelay: 0}, 40); d <= 0 {
		t.Errorf("uncapped backoff overflowed to %v", d)
	}
}

func TestRetry(t *testing.T) {
	p := spec.RetryPolicy{MaxRetries: 2, InitialDelay: time.Minute, BackoffFactor: 3, MaxDelay: time.Hour}
	tests := []struct {
		attempt   int
		retryable bool
		wantDelay time.Duration
		wantRetry bool
	}{
		{1, true, time.Minute, true},
		{2, true, 3 * time.Minute, true},
		{3, true, 0, false},
		{1, false, 0, false},
	}
	for _, tt := range tests {
		d, ok := Retry(p, tt.attempt, tt.retryable)
		if d != tt.wantDelay || ok != tt.wantRetry {
			t.Errorf("Retry(attempt %d, retryable %v) = %v, %v; want %v, %v",
				tt.attempt, tt.retryable, d, ok, tt.wantDelay, tt.wantRetry)
		}
	}
}

func TestResolveIsExactForFanIn(t *testing.T) {
	g, err := Build(&spec.Workflow{Name: "w", Steps: []spec.Step{{Name: "a"}, {Name: "b"}, {Name: "c", Parents: []string{"a", "b"}}}})
	if err != nil {
		t.Fatal(err)
	}
	pending, roots := InitialPending(g)
	if diff := cmp.Diff([]int{0, 1}, roots); diff != "" {
		t.Fatalf("roots (-want +got):\n%s", diff)
	}
	if ready := Resolve(pending, g.Steps[0].Children); len(ready) != 0 {
		t.Fatalf("c ready after one parent: %v", ready)
	}
	if ready := Resolve(pending, g.Steps[1].Children); !cmp.Equal(ready, []int{2}) {
		t.Fatalf("ready = %v, want [2]", ready)
	}
	if ready := Resolve(pending, g.Steps[1].Children); len(ready) != 0 {
		t.Fatalf("c became ready twice: %v", ready)
	}
}

func TestCascadeSkipNeedsAllParentsSkipped(t *testing.T) {
	tests := []struct {
		parents []store.TaskStatus
		want    bool
	}{
		{nil, false},
		{[]store.TaskStatus{store.TaskSkipped}, true},
		{[]store.TaskStatus{store.TaskSkipped, store.TaskSkipped}, true},
		{[]store.TaskStatus{store.TaskSkipped, store.TaskCompleted}, false},
		{[]store.TaskStatus{store.TaskCompleted}, false},
	}
	for _, tt := range tests {
		if got := CascadeSkip(tt.parents); got != tt.want {
			t.Errorf("CascadeSkip(%v) = %v, want %v", tt.parents, got, tt.want)
		}
	}
}

func TestCancels(t *testing.T) {
	for _, s := range []store.TaskStatus{store.TaskPending, store.TaskQueued, store.TaskRunning, store.TaskSleeping, store.TaskRetrying} {
		if !Cancels(s) {
			t.Errorf("Cancels(%s) = false", s)
		}
	}
	for _, s := range []store.TaskStatus{store.TaskCompleted, store.TaskSkipped, store.TaskFailed, store.TaskCancelled} {
		if Cancels(s) {
			t.Errorf("Cancels(%s) = true", s)
		}
	}
}

func TestBelowIsTheStepAndItsDescendants(t *testing.T) {
	g, err := Build(orderWorkflow())
	if err != nil {
		t.Fatal(err)
	}
	for from, want := range map[string][]string{
		"charge":   {"charge", "fraud-window", "prepare-shipment", "ship", "finalize"},
		"reject":   {"reject", "finalize"},
		"finalize": {"finalize"},
	} {
		s, _ := g.Step(from)
		var got []string
		for i, below := range g.Below(s.Index) {
			if below {
				got = append(got, g.Steps[i].Name)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Below(%s) (-want +got):\n%s", from, diff)
		}
	}
}
