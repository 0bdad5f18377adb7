package runtime_test

import (
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
)

func TestCompileRejectsBadSpecs(t *testing.T) {
	tests := []struct {
		name string
		spec runtime.WorkflowSpec
		want string
	}{
		{"workflow name", runtime.WorkflowSpec{Name: "Orders"}, `workflow: name: "Orders" is invalid`},
		{"step name", runtime.WorkflowSpec{Name: "w", Steps: []runtime.StepSpec{{Name: "bad_name"}}}, `step "bad_name": name: "bad_name" is invalid`},
		{"handler name", runtime.WorkflowSpec{Name: "w", Steps: []runtime.StepSpec{{Name: "a"}}, OnFailure: &runtime.OnFailureSpec{Name: "-x"}}, `onFailure: name: "-x" is invalid`},
		{"cycle", runtime.WorkflowSpec{Name: "w", Steps: []runtime.StepSpec{{Name: "a", Parents: []string{"b"}}, {Name: "b", Parents: []string{"a"}}}}, "a -> b -> a"},
		{"input schema", runtime.WorkflowSpec{Name: "w", InputSchema: `{"type": 3}`, Steps: []runtime.StepSpec{{Name: "a"}}}, "input schema"},
		{"condition", runtime.WorkflowSpec{Name: "w", InputSchema: `{"type":"object","properties":{"x":{"type":"integer"}}}`,
			Steps: []runtime.StepSpec{{Name: "a", SkipIf: []string{"input.y > 1"}}}}, "undefined field 'y'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := runtime.Compile(&tt.spec); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestDefinitionVersionIgnoresDocs(t *testing.T) {
	spec := runtime.WorkflowSpec{Name: "w", InputSchema: `{"type":"object"}`, Steps: []runtime.StepSpec{{Name: "a"}}}
	a, err := runtime.Compile(&spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Description, spec.Source = "changed", "elsewhere.yaml"
	b, _ := runtime.Compile(&spec)
	spec.Steps = append(spec.Steps, runtime.StepSpec{Name: "b", Parents: []string{"a"}})
	c, _ := runtime.Compile(&spec)
	if a.Version() != b.Version() || a.Version() == c.Version() || !strings.HasPrefix(a.Version(), "w@") {
		t.Errorf("versions: %s, %s (docs changed), %s (a step added)", a.Version(), b.Version(), c.Version())
	}
}

func TestSpecIsACopy(t *testing.T) {
	spec := &runtime.WorkflowSpec{Name: "copy", InputSchema: `{"type":"object"}`,
		Steps:     []runtime.StepSpec{{Name: "a"}, {Name: "b", Parents: []string{"a"}, SkipIf: []string{"true"}}},
		OnFailure: &runtime.OnFailureSpec{Name: "alert"}}
	def, err := runtime.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	got := def.Spec()
	got.Steps[1].Parents[0] = "x"
	got.Steps[1].SkipIf[0] = "false"
	got.Steps[0].Name = "y"
	got.OnFailure.Name = "z"
	again := def.Spec()
	if again.Steps[1].Parents[0] != "a" || again.Steps[1].SkipIf[0] != "true" || again.Steps[0].Name != "a" || again.OnFailure.Name != "alert" {
		t.Errorf("changing a returned spec changed the definition: %+v", again)
	}
}
