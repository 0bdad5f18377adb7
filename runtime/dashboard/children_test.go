package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
)

// TestChildRunsLinked: a map step's run page counts the runs of its
// items and links to them; the runs list filters by parent; an item's
// page links back to the run and step that started it.
func TestChildRunsLinked(t *testing.T) {
	b := setup(t, dashboard.Options{})
	spec := &runtime.WorkflowSpec{
		Name:        "squares",
		InputSchema: `{"type":"object","required":["ns"],"properties":{"ns":{"type":"array","items":{"type":"integer"}}}}`,
		Steps: []runtime.StepSpec{{Name: "square", ForEach: &runtime.ForEachSpec{Items: "input.ns", ItemSchema: `{"type":"integer"}`},
			OutputSchema: `{"type":"object","properties":{"sq":{"type":"integer"}}}`}},
	}
	wf, err := b.h.Engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"square": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			var n int
			if err := json.Unmarshal(req.Input, &n); err != nil {
				return nil, err
			}
			return json.RawMessage(fmt.Sprintf(`{"sq":%d}`, n*n)), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := wf.Run(t.Context(), json.RawMessage(`{"ns":[1,2,3]}`))
	if err != nil {
		t.Fatal(err)
	}
	page := b.page("/runs/"+res.ID.String(), 200)
	for _, want := range []string{"Child runs", "3 completed", `href="/runs?parent=` + res.ID.String() + `"`, "k-waiting",
		"square: waited"} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	items := b.h.Items(res.ID, "square")
	if len(items) != 3 {
		t.Fatalf("%d items", len(items))
	}
	list := b.page("/runs?parent="+res.ID.String(), 200)
	for _, it := range items {
		if !strings.Contains(list, it.ID.String()) {
			t.Errorf("the runs list by parent lacks item %s", it.ID)
		}
	}
	if !strings.Contains(list, "started by run "+res.ID.String()) {
		t.Errorf("the runs list does not say it lists the runs a run started")
	}
	item := b.page("/runs/"+items[1].ID.String(), 200)
	if !strings.Contains(item, `id="parent" href="/runs/`+res.ID.String()+`"`) || !strings.Contains(item, `step <span class="step-name">square</span> (index 1)`) {
		t.Errorf("the item's page does not link to its parent")
	}
	if code, _ := b.get("/runs?parent=nope"); code != 400 {
		t.Errorf("runs?parent=nope = %d, want 400", code)
	}
}
