package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func retry() RetryPolicy { return DefaultRetryPolicy() }

func TestCheckAcceptsAValidWorkflow(t *testing.T) {
	w := &Workflow{Name: "orders", Steps: []Step{
		{Name: "validate", Retry: retry()},
		{Name: "wait", Parents: []string{"validate"}, Sleep: time.Hour},
		{Name: "ship", Parents: []string{"wait", "validate"}, Retry: RetryPolicy{}, Timeout: time.Minute},
	}, OnFailure: &OnFailure{Name: "notify", Retry: retry()}}
	if problems := w.Check(); len(problems) > 0 {
		t.Fatalf("Check = %v, want none", problems)
	}
}

func TestCheckLocatesEveryProblem(t *testing.T) {
	w := &Workflow{Name: "Orders", Steps: []Step{
		{Name: "a", Parents: []string{"a", "nope", "notify"}},
		{Name: "a"},
		{Name: "b-", Timeout: -time.Second},
		{Name: "c", Parents: []string{"a", "a"}, Retry: RetryPolicy{MaxRetries: 1, InitialDelay: time.Minute, BackoffFactor: 0.5, MaxDelay: time.Second}},
	}, OnFailure: &OnFailure{Name: "notify"}}
	type where struct {
		Rule         Rule
		Step         int
		Handler      bool
		Field        string
		Index, Other int
	}
	var got []where
	for _, p := range w.Check() {
		got = append(got, where{p.Rule, p.Step, p.Handler, p.Field, p.Index, p.Other})
	}
	want := []where{
		{RuleName, -1, false, "name", -1, -1},
		{RuleDuplicateStep, 1, false, "name", -1, 0},
		{RuleName, 2, false, "name", -1, -1},
		{RuleSelfParent, 0, false, "parents", 0, -1},
		{RuleUnknownParent, 0, false, "parents", 1, -1},
		{RuleHandlerParent, 0, false, "parents", 2, -1},
		{RuleRepeatParent, 3, false, "parents", 1, -1},
		{RuleDuration, 2, false, "timeout", -1, -1},
		{RuleRetry, 3, false, "retry.backoffFactor", -1, -1},
		{RuleRetry, 3, false, "retry.maxDelay", -1, -1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestCheckRefusesAHandlerNamedLikeAStep(t *testing.T) {
	w := &Workflow{Name: "w", Steps: []Step{{Name: "a"}, {Name: "b"}}, OnFailure: &OnFailure{Name: "b"}}
	p := w.Check()
	if len(p) != 1 || p[0].Rule != RuleHandlerName || !p[0].Handler || p[0].Other != 1 {
		t.Fatalf("Check = %+v, want one handler-name problem relating to step 1", p)
	}
	if got, want := p[0].String(), `onFailure: name: onFailure name "b" is also the name of a step; give the failure handler a name of its own`; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestCheckReportsEachIndependentCycleAtItsClosingLink(t *testing.T) {
	w := &Workflow{Name: "w", Steps: []Step{
		{Name: "start"},
		{Name: "a", Parents: []string{"start", "c"}},
		{Name: "b", Parents: []string{"a"}},
		{Name: "c", Parents: []string{"b"}},
		{Name: "d", Parents: []string{"e"}},
		{Name: "e", Parents: []string{"d"}},
	}}
	var got []string
	for _, p := range w.Check() {
		if p.Rule != RuleCycle {
			t.Errorf("unexpected problem %v", p)
			continue
		}
		got = append(got, p.String())
	}
	want := []string{
		`step "a": parents[1]: steps form a cycle: a -> b -> c -> a; a step cannot wait for itself, remove one of these parent links`,
		`step "d": parents[0]: steps form a cycle: d -> e -> d; a step cannot wait for itself, remove one of these parent links`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cycles (-want +got):\n%s", diff)
	}
}

func TestRetryPolicyCheck(t *testing.T) {
	if p := (RetryPolicy{}).Check(); p != nil {
		t.Errorf("zero policy: %v, want valid (no retries)", p)
	}
	if p := DefaultRetryPolicy().Check(); p != nil {
		t.Errorf("default policy: %v", p)
	}
	p := RetryPolicy{MaxRetries: -1, InitialDelay: 0, BackoffFactor: 1, MaxDelay: time.Second}.Check()
	var fields []string
	for _, q := range p {
		fields = append(fields, q.Field)
	}
	if diff := cmp.Diff([]string{"retry.maxRetries", "retry.initialDelay"}, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestMaySkipFollowsTheCascadeRule(t *testing.T) {
	w := &Workflow{Name: "w", Steps: []Step{
		{Name: "root"},
		{Name: "maybe", Parents: []string{"root"}, SkipIf: []string{"input.skip"}},
		{Name: "after-maybe", Parents: []string{"maybe"}},
		{Name: "join", Parents: []string{"after-maybe", "root"}},
		{Name: "join-skippable", Parents: []string{"maybe", "after-maybe"}},
	}}
	want := []bool{false, true, true, false, true}
	if diff := cmp.Diff(want, w.MaySkip()); diff != "" {
		t.Errorf("MaySkip (-want +got):\n%s", diff)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "order-processing", "step2", "a-b-c"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "A", "2nd", "-a", "a-", "a_b", "a b", "é"} {
		err := CheckName(bad)
		if err == nil {
			t.Errorf("CheckName(%q) accepted it", bad)
			continue
		}
		if bad != "" && !strings.Contains(err.Error(), "lowercase") {
			t.Errorf("CheckName(%q) = %v, want the rule spelt out", bad, err)
		}
	}
}

// TestCheckRunLimitsAndDebounce: what Check says of runConcurrency and
// debounce, which the engine applies to specs written by hand too.
func TestCheckRunLimitsAndDebounce(t *testing.T) {
	tests := []struct {
		name string
		rc   *RunConcurrency
		db   *Debounce
		want []string // messages, by a part of each
	}{
		{"valid limit", &RunConcurrency{Key: "input.c", Max: 1, Strategy: StrategyCancelNewest}, nil, nil},
		{"default strategy", &RunConcurrency{Key: "input.c", Max: 2}, nil, nil},
		{"limit without key or max", &RunConcurrency{Max: 0}, nil, []string{"needs a key", "max 0 is below 1"}},
		{"unknown strategy", &RunConcurrency{Key: "input.c", Max: 1, Strategy: "newest"}, nil, []string{`strategy "newest" is not one of queue, cancelInProgress, cancelNewest`}},
		{"valid debounce", nil, &Debounce{Key: "input.c", Window: time.Second, MaxWait: time.Minute}, nil},
		{"debounce without window", nil, &Debounce{Key: "input.c"}, []string{"window 0s is not positive"}},
		{"maxWait below window", nil, &Debounce{Key: "input.c", Window: time.Minute, MaxWait: time.Second}, []string{"maxWait 1s is below the window 1m0s"}},
		{"both", &RunConcurrency{Key: "input.c", Max: 1}, &Debounce{Key: "input.c", Window: time.Second}, []string{"cannot be combined"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &Workflow{Name: "w", Steps: []Step{{Name: "a", Retry: retry()}}, RunConcurrency: tt.rc, Debounce: tt.db}
			var got []string
			for _, p := range w.Check() {
				got = append(got, p.Message)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Check = %q, want %d problems like %q", got, len(tt.want), tt.want)
			}
			for i, m := range tt.want {
				if !strings.Contains(got[i], m) {
					t.Errorf("problem %d = %q, want it to say %q", i, got[i], m)
				}
			}
		})
	}
}
