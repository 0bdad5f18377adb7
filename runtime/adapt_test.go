package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
)

type adaptIn struct {
	N int `json:"n"`
}

type adaptOut struct {
	V int `json:"v"`
}

type adaptParents struct {
	A adaptOut  `trellis:"a"`
	B *adaptOut `trellis:"b"`
	C bool      `trellis:"c"`
}

func adaptRequest(input string, parents map[string]json.RawMessage) *runtime.StepRequest {
	return &runtime.StepRequest{
		Info:    runtime.StepInfo{Workflow: "wf", Step: "s"},
		Input:   json.RawMessage(input),
		Parents: parents,
	}
}

func TestStepAdapterDecodesParents(t *testing.T) {
	var got adaptParents
	fn := runtime.Step(func(_ context.Context, in adaptIn, p adaptParents) (adaptOut, error) {
		got = p
		return adaptOut{V: in.N + p.A.V}, nil
	})
	out, err := fn(context.Background(), adaptRequest(`{"n":1}`, map[string]json.RawMessage{
		"a": json.RawMessage(`{"v":2}`), "c": nil,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"v":3}` {
		t.Errorf("output = %s, want {\"v\":3}", out)
	}
	if got.A.V != 2 || got.B != nil || !got.C {
		t.Errorf("parents = %+v, want A.V=2, B nil, C true", got)
	}

	_, err = fn(context.Background(), adaptRequest(`{"n":1}`, map[string]json.RawMessage{
		"a": json.RawMessage(`{"v":2}`), "b": json.RawMessage(`{"v":5}`),
	}))
	if err != nil || got.B == nil || got.B.V != 5 || got.C {
		t.Errorf("err = %v, parents = %+v; want B.V=5, C false", err, got)
	}
}

func TestStepAdapterErrorsAreNonRetryable(t *testing.T) {
	fn := runtime.StepNoOutput(func(context.Context, adaptIn, adaptParents) error { return nil })
	for _, tt := range []struct {
		name, input string
		parents     map[string]json.RawMessage
		want        string
	}{
		{"input", `{"n":"x"}`, nil, "decoding wf input: "},
		{"missing", `{}`, nil, "step a did not complete, though step s cannot run without it"},
		{"parent", `{}`, map[string]json.RawMessage{"a": json.RawMessage(`[]`)}, "decoding output of a: "},
		{"optional", `{}`, map[string]json.RawMessage{"a": json.RawMessage(`{}`), "b": json.RawMessage(`1`)}, "decoding output of b: "},
	} {
		_, err := fn(context.Background(), adaptRequest(tt.input, tt.parents))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || runtime.IsRetryable(err) {
			t.Errorf("%s: err = %v, want a non-retryable error starting with %q", tt.name, err, tt.want)
		}
	}
}

func TestRootAndFailureAdapters(t *testing.T) {
	boom := errors.New("boom")
	out, err := runtime.RootStepNoOutput(func(context.Context, adaptIn) error { return boom })(context.Background(), adaptRequest(`{}`, nil))
	if out != nil || !errors.Is(err, boom) {
		t.Errorf("RootStepNoOutput = %s, %v; want nil, the step's error", out, err)
	}
	out, err = runtime.RootStep(func(_ context.Context, in adaptIn) (adaptOut, error) { return adaptOut{V: in.N}, nil })(context.Background(), adaptRequest(`{"n":4}`, nil))
	if string(out) != `{"v":4}` || err != nil {
		t.Errorf("RootStep = %s, %v; want {\"v\":4}", out, err)
	}
	var failed runtime.Failure
	h := runtime.FailureHandler(func(_ context.Context, _ adaptIn, f runtime.Failure) error { failed = f; return nil })
	err = h(context.Background(), &runtime.FailureRequest{Info: runtime.StepInfo{Workflow: "wf"}, Input: json.RawMessage(`{}`), Failure: runtime.Failure{Step: "a", Error: "x"}})
	if err != nil || failed.Step != "a" {
		t.Errorf("FailureHandler: err = %v, failure = %+v", err, failed)
	}
	err = h(context.Background(), &runtime.FailureRequest{Info: runtime.StepInfo{Workflow: "wf"}, Input: json.RawMessage(`1`)})
	if err == nil || runtime.IsRetryable(err) || !strings.HasPrefix(err.Error(), "decoding wf input: ") {
		t.Errorf("FailureHandler with bad input: err = %v", err)
	}
}

func TestStepAdapterRejectsUntaggedParents(t *testing.T) {
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "trellis tag") {
			t.Errorf("panic = %v, want one about the missing trellis tag", p)
		}
	}()
	runtime.StepNoOutput(func(context.Context, adaptIn, struct{ A adaptOut }) error { return nil })
}
