package spec

import (
	"strings"
	"testing"
	"time"
)

func TestCheckRunsOn(t *testing.T) {
	many := map[string]string{}
	for i := range MaxStepLabels + 1 {
		many["k"+strings.Repeat("x", i)] = "v"
	}
	w := &Workflow{Name: "w", Steps: []Step{
		{Name: "ok", RunsOn: map[string]string{"gpu": "true", "topology.example.com/zone": "eu-west-1a"}},
		{Name: "nap", Sleep: time.Second, RunsOn: map[string]string{"gpu": "true"}},
		{Name: "bad-key", RunsOn: map[string]string{"gpu=x": "true"}},
		{Name: "empty-value", RunsOn: map[string]string{"gpu": ""}},
		{Name: "long", RunsOn: map[string]string{strings.Repeat("k", 64): "v"}},
		{Name: "many", RunsOn: many},
	}, OnFailure: &OnFailure{Name: "notify", RunsOn: map[string]string{"a,b": "c"}}}
	got := map[string]string{}
	for _, p := range w.Check() {
		if p.Rule != RuleRunsOn || p.Field != "runsOn" {
			t.Errorf("unexpected problem %s (rule %s)", p, p.Rule)
			continue
		}
		got[p.owner()] += p.Message + "; "
	}
	want := map[string]string{
		`step "nap"`:         "runs no code",
		`step "bad-key"`:     `label key "gpu=x": has "=" at byte 3`,
		`step "empty-value"`: `value "" of label gpu: is empty`,
		`step "long"`:        "64 bytes long, more than 63",
		`step "many"`:        "17 labels, more than the 16 allowed",
		`onFailure`:          `label key "a,b": has ","`,
	}
	for owner, part := range want {
		if !strings.Contains(got[owner], part) {
			t.Errorf("%s: problems %q, want one saying %q", owner, got[owner], part)
		}
	}
	if got[`step "ok"`] != "" {
		t.Errorf("step ok: %s", got[`step "ok"`])
	}
}

func TestLabelList(t *testing.T) {
	got := LabelList(map[string]string{"region": "eu", "gpu": "a100"})
	if strings.Join(got, ",") != "gpu=a100,region=eu" {
		t.Errorf("LabelList = %v", got)
	}
	if LabelList(nil) != nil {
		t.Error("LabelList(nil) is not nil")
	}
	if !LabelsInclude([]string{"gpu=a100", "region=eu", "x=y"}, got) || LabelsInclude([]string{"gpu=a100"}, got) {
		t.Error("LabelsInclude is wrong")
	}
}
