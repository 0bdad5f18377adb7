package spec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	objTotal    = `{"type":"object","properties":{"total":{"type":"integer"}},"required":["total"]}`
	objTotalCur = `{"type":"object","properties":{"total":{"type":"integer"},"currency":{"type":"string"}},"required":["total"]}`
)

// base is the old version every case of TestCompare changes.
func base() *Workflow {
	return &Workflow{
		Name:        "orders",
		InputSchema: `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`,
		Events:      []Event{{Name: "paid", Schema: `{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`}},
		Steps: []Step{
			{Name: "price", OutputSchema: objTotal},
			{Name: "charge", Parents: []string{"price"}, OutputSchema: `{"type":"object","properties":{"ok":{"type":"boolean"}}}`},
			{Name: "wait", Parents: []string{"charge"}, WaitFor: &WaitFor{Event: "paid"}},
			{Name: "ship", Parents: []string{"wait"}, Workflow: &ChildWorkflow{Name: "shipping", Input: map[string]string{"id": "input.id"}}},
		},
	}
}

type changeOf struct {
	Kind     ChangeKind
	Step     string
	NewStep  string
	Event    string
	Breaking bool
}

func TestCompare(t *testing.T) {
	cases := []struct {
		name   string
		change func(w *Workflow)
		want   []changeOf
		// says is a part of the first change's message.
		says string
	}{
		{"same", func(w *Workflow) {}, nil, ""},
		{"retry and timeout are not contract", func(w *Workflow) {
			w.Steps[1].Retry.MaxRetries = 5
			w.Steps[1].Timeout = time.Minute
			w.Description = "new"
		}, nil, ""},
		{"step removed", func(w *Workflow) {
			w.Steps = append(w.Steps[:1:1], w.Steps[2:]...)
			w.Steps[1].Parents = []string{"price"}
		}, []changeOf{
			{ChangeStepRemoved, "charge", "", "", true},
			{ChangeParents, "wait", "wait", "", false},
			{ChangeParents, "wait", "wait", "", false},
		}, "step charge was removed"},
		{"step renamed", func(w *Workflow) {
			w.Steps[1].Name = "bill"
			w.Steps[2].Parents = []string{"bill"}
		}, []changeOf{
			{ChangeStepRenamed, "charge", "bill", "", true},
		}, "step charge was renamed bill"},
		{"renamed step with another output is removed", func(w *Workflow) {
			w.Steps[1].Name = "bill"
			w.Steps[1].OutputSchema = objTotal
			w.Steps[2].Parents = []string{"bill"}
		}, []changeOf{
			{ChangeStepRemoved, "charge", "", "", true},
			{ChangeParents, "wait", "wait", "", false},
			{ChangeParents, "wait", "wait", "", false},
		}, ""},
		{"step kind changed", func(w *Workflow) {
			w.Steps[1].Sleep = time.Hour
		}, []changeOf{
			{ChangeStepKind, "charge", "charge", "", true},
		}, "was a code step and is a sleep step"},
		{"parent added", func(w *Workflow) {
			w.Steps[1].Parents = []string{"price", "wait"}
		}, []changeOf{
			{ChangeParents, "charge", "charge", "", true},
		}, "has new parents wait: its code reads their outputs"},
		{"parent added to a step without code", func(w *Workflow) {
			w.Steps[3].Parents = []string{"wait", "price"}
		}, []changeOf{
			{ChangeParents, "ship", "ship", "", false},
		}, "has new parents price"},
		{"parent removed", func(w *Workflow) {
			w.Steps[1].Parents = nil
		}, []changeOf{
			{ChangeParents, "charge", "charge", "", false},
		}, "no longer has parents price"},
		{"output: property added optional", func(w *Workflow) {
			w.Steps[0].OutputSchema = objTotalCur
		}, nil, ""},
		{"output: property removed", func(w *Workflow) {
			w.Steps[0].OutputSchema = `{"type":"object","properties":{}}`
		}, []changeOf{
			{ChangeOutput, "price", "price", "", true},
		}, "output.total was removed"},
		{"output: type changed", func(w *Workflow) {
			w.Steps[0].OutputSchema = strings.Replace(objTotal, `"integer"`, `"string"`, 1)
		}, []changeOf{
			{ChangeOutput, "price", "price", "", true},
		}, "output.total: type changed from integer to string"},
		{"output: property added required", func(w *Workflow) {
			w.Steps[0].OutputSchema = strings.Replace(objTotalCur, `["total"]`, `["total","currency"]`, 1)
		}, []changeOf{
			{ChangeOutput, "price", "price", "", true},
		}, "output.currency was added as required"},
		{"output: keyword it cannot decide", func(w *Workflow) {
			w.Steps[0].OutputSchema = `{"type":"object","properties":{"total":{"type":"integer","minimum":1}},"required":["total"]}`
		}, []changeOf{
			{ChangeOutput, "price", "price", "", true},
		}, "keyword minimum of output.total changed, which the check cannot decide is compatible; treated as changed"},
		{"output: description only", func(w *Workflow) {
			w.Steps[0].OutputSchema = `{"type":"object","description":"the price","properties":{"total":{"type":"integer","title":"Total"}},"required":["total"]}`
		}, nil, ""},
		{"input: new required property", func(w *Workflow) {
			w.InputSchema = `{"type":"object","properties":{"id":{"type":"string"},"region":{"type":"string"}},"required":["id","region"]}`
		}, []changeOf{
			{ChangeInput, "", "", "", true},
		}, "input schema: input.region was added as required"},
		{"input: property removed is not breaking", func(w *Workflow) {
			w.InputSchema = `{"type":"object","properties":{}}`
		}, nil, ""},
		{"input: integer widened to number", func(w *Workflow) {
			w.InputSchema = `{"type":"object","properties":{"id":{"type":["string","number"]}},"required":["id"]}`
		}, nil, ""},
		{"input: type narrowed", func(w *Workflow) {
			w.InputSchema = `{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`
		}, []changeOf{
			{ChangeInput, "", "", "", true},
		}, "input schema: input.id: type changed from string to integer"},
		{"input: enum narrowed", func(w *Workflow) {
			w.InputSchema = `{"type":"object","properties":{"id":{"type":"string","enum":["a"]}},"required":["id"]}`
		}, []changeOf{
			{ChangeInput, "", "", "", true},
		}, "input schema: enum of input.id changed"},
		{"event payload changed", func(w *Workflow) {
			w.Events[0].Schema = `{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`
		}, []changeOf{
			{ChangeEvent, "", "", "paid", true},
		}, "event paid payload schema: payload.amount: type number is now allowed"},
		{"wait for another event", func(w *Workflow) {
			w.Events = append(w.Events, Event{Name: "refunded", Schema: w.Events[0].Schema})
			w.Steps[2].WaitFor = &WaitFor{Event: "refunded"}
		}, []changeOf{
			{ChangeEvent, "wait", "wait", "", true},
		}, "step wait waits for event refunded instead of paid"},
		{"event removed", func(w *Workflow) {
			w.Events = nil
			w.Steps[2].WaitFor = nil
		}, []changeOf{
			{ChangeStepKind, "wait", "wait", "", true},
			{ChangeEvent, "", "", "paid", true},
		}, "step wait was a wait step and is a code step"},
		{"child workflow changed", func(w *Workflow) {
			w.Steps[3].Workflow = &ChildWorkflow{Name: "delivery", Input: map[string]string{"id": "input.id"}}
		}, []changeOf{
			{ChangeChild, "ship", "ship", "", true},
		}, "step ship starts workflow delivery instead of shipping"},
		{"child outputs changed", func(w *Workflow) {
			w.Steps[3].OutputSchema = `{"type":"object","properties":{"label":{"type":"string"}}}`
		}, []changeOf{
			{ChangeChild, "ship", "ship", "", true},
		}, "step ship: the outputs of workflow shipping changed: a schema was added where there was none"},
		{"child input built otherwise", func(w *Workflow) {
			w.Steps[3].Workflow.Input = map[string]string{"order": "input.id"}
		}, []changeOf{
			{ChangeChild, "ship", "ship", "", true},
		}, "builds the input of workflow shipping otherwise"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := base()
			nw := base()
			c.change(nw)
			changes := Compare(old, nw)
			var got []changeOf
			for _, ch := range changes {
				got = append(got, changeOf{ch.Kind, ch.Step, ch.NewStep, ch.Event, ch.Breaking})
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s\n%v", diff, changes)
			}
			if c.says != "" && (len(changes) == 0 || !strings.Contains(changes[0].Message, c.says)) {
				t.Errorf("first message = %v, want it to contain %q", changes, c.says)
			}
		})
	}
}

// TestCompareIsBoundedOnHostileSchemas: a schema that is not JSON, or
// is deep or wide, gives a bounded answer instead of a panic.
func TestCompareIsBoundedOnHostileSchemas(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, 200) + `{"type":"string"}` + strings.Repeat("}", 200)
	deeper := strings.Repeat(`{"type":"array","items":`, 200) + `{"type":"integer"}` + strings.Repeat("}", 200)
	var props, props2 []string
	for i := range 500 {
		p, _ := json.Marshal(map[string]string{"type": "string"})
		props = append(props, `"p`+strings.Repeat("x", i%7)+string(rune('a'+i%26))+`_`+strings.Repeat("y", i/26)+`":`+string(p))
		props2 = append(props2, `"q`+string(rune('a'+i%26))+strings.Repeat("z", i/26)+`":{}`)
	}
	wide := `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
	wide2 := `{"type":"object","properties":{` + strings.Join(props2, ",") + `}}`
	for _, c := range []struct{ old, new string }{
		{"{", objTotal},
		{deep, deeper},
		{wide, wide2},
		{`true`, `false`},
	} {
		old := base()
		old.Steps[0].OutputSchema = c.old
		nw := base()
		nw.Steps[0].OutputSchema = c.new
		changes := Compare(old, nw)
		if len(changes) == 0 || len(changes) > maxSchemaDiffs+1 {
			t.Errorf("Compare(%.30s..., %.30s...) = %d changes, want 1 to %d", c.old, c.new, len(changes), maxSchemaDiffs+1)
		}
		for _, ch := range changes {
			if !ch.Breaking || ch.Kind != ChangeOutput {
				t.Errorf("change %+v, want a breaking output change", ch)
			}
		}
	}
}

func TestChangeKindsAreValid(t *testing.T) {
	for _, k := range ChangeKinds() {
		if !k.Valid() {
			t.Errorf("%s is not Valid", k)
		}
	}
	if ChangeKind("nope").Valid() {
		t.Error("nope is Valid")
	}
}

func TestChildContract(t *testing.T) {
	step := base().Steps[3] // builds input id
	child := &Workflow{Name: "shipping", InputSchema: `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`}
	if got := ChildContract(&step, child); len(got) != 0 {
		t.Errorf("ChildContract of a supplied input = %v", got)
	}
	child.InputSchema = `{"type":"object","properties":{"id":{"type":"string"},"carrier":{"type":"string"}},"required":["id","carrier"]}`
	got := ChildContract(&step, child)
	if len(got) != 1 || got[0].Kind != ChangeChild || !got[0].Breaking || got[0].Message != "workflow shipping requires input carrier, which step ship does not build" {
		t.Errorf("ChildContract of a new required input = %+v", got)
	}
	step.Workflow.Input = nil // its code builds the input
	if got := ChildContract(&step, child); len(got) != 0 {
		t.Errorf("ChildContract of a step whose code builds the input = %v", got)
	}
}
