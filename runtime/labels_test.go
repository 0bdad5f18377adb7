package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// renderSteps runs the render workflow (testdata/acceptance/render.yaml)
// on one engine, each step answering with the engine's name.
type renderSteps struct{ worker string }

func (s renderSteps) Prepare(context.Context, wf.RenderInput) (wf.RenderPrepareOutput, error) {
	return wf.RenderPrepareOutput{Worker: s.worker}, nil
}

func (s renderSteps) Draw(context.Context, wf.RenderDrawItem) (wf.RenderDrawOutput, error) {
	return wf.RenderDrawOutput{Worker: s.worker}, nil
}

func (s renderSteps) Publish(context.Context, wf.RenderInput, wf.RenderPublishParents) (wf.RenderPublishOutput, error) {
	return wf.RenderPublishOutput{Worker: s.worker}, nil
}

func TestLabelsRouteStepsMemory(t *testing.T) {
	testLabelsRouteSteps(t, func(*testing.T) store.Store { return memstore.New() })
}

func TestLabelsRouteStepsPostgres(t *testing.T) {
	testLabelsRouteSteps(t, func(t *testing.T) store.Store { return pgstore.New(pgtest.Pool(t)) })
}

// testLabelsRouteSteps drives three engines on one store by hand: one
// without labels, one in region eu, one in region eu with a gpu. Each
// step of a render run runs only where its runsOn allows: prepare
// (defaults.runsOn: region eu) on the eu engines, draw's items (gpu and
// eu) on the gpu engine, publish (runsOn: {}) anywhere.
func testLabelsRouteSteps(t *testing.T, newStore func(*testing.T) store.Store) {
	s := newStore(t)
	engine := func(name string, labels map[string]string) (*trellistest.Harness, *wf.RenderClient) {
		h := trellistest.New(t, trellistest.WithStore(s), trellistest.WithConfig(func(c *runtime.Config) {
			c.WorkerID, c.Labels = name, labels
		}))
		client, err := wf.RegisterRender(h.Engine, renderSteps{worker: name})
		if err != nil {
			t.Fatal(err)
		}
		return h, client
	}
	bare, client := engine("bare", nil)
	eu, _ := engine("eu", map[string]string{"region": "eu"})
	gpu, _ := engine("gpu", map[string]string{"region": "eu", "gpu": "a100", "rack": "7"})

	ref, err := client.RunNoWait(t.Context(), wf.RenderInput{Frames: []int64{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	// The engine without labels can run nothing of it: every step but
	// publish needs region eu.
	if n := bare.RunUntilIdle(); n != 0 {
		t.Fatalf("the engine without labels processed %d tasks, want none", n)
	}
	eu.RunUntilIdle()
	if got := bare.Steps(ref.ID); got["prepare"] != runtime.TaskCompleted || got["draw"] == runtime.TaskCompleted {
		t.Fatalf("after the eu engine: steps %v, want prepare completed and draw not", got)
	}
	gpu.RunUntilIdle()
	eu.RunUntilIdle()
	bare.RunUntilIdle()
	res := bare.Result(ref.ID)
	if res.Status != runtime.RunCompleted {
		t.Fatalf("run %s, want COMPLETED", res.Status)
	}
	var out struct {
		Prepare wf.RenderPrepareOutput
		Draw    []wf.RenderDrawOutput
	}
	if err := json.Unmarshal(res.Outputs["prepare"], &out.Prepare); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(res.Outputs["draw"], &out.Draw); err != nil {
		t.Fatal(err)
	}
	if out.Prepare.Worker != "eu" {
		t.Errorf("prepare ran on %s, want eu (the only engine in region eu until the gpu engine ran)", out.Prepare.Worker)
	}
	var drew []string
	for _, d := range out.Draw {
		drew = append(drew, d.Worker)
	}
	if strings.Join(drew, ",") != "gpu,gpu,gpu" {
		t.Errorf("draw's items ran on %v, want the gpu engine for each", drew)
	}
}

func TestConfigLabelsAreChecked(t *testing.T) {
	for _, labels := range []map[string]string{
		{"gpu": ""}, {"": "x"}, {"a=b": "c"}, {"gpu": strings.Repeat("x", 64)},
	} {
		_, err := runtime.New(runtime.Config{Store: memstore.New(), Labels: labels})
		if err == nil || !strings.Contains(err.Error(), "runtime.Config: Labels: ") {
			t.Errorf("New with labels %q: %v, want an error naming Config.Labels", labels, err)
		}
	}
	many := map[string]string{}
	for i := range 65 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	if _, err := runtime.New(runtime.Config{Store: memstore.New(), Labels: many}); err == nil || !strings.Contains(err.Error(), "more than the 64 allowed") {
		t.Errorf("New with 65 labels: %v", err)
	}
}
