package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/effectivelabs/trellis/runtime/condition"
	"github.com/effectivelabs/trellis/runtime/internal/dag"
)

// Definition is a compiled WorkflowSpec: its validated graph, its
// conditions compiled to CEL programs and its input and output schemas
// compiled for validation. A Definition is immutable and safe for
// concurrent use.
type Definition struct {
	spec    WorkflowSpec
	version string
	graph   *dag.Graph
	input   *schema
	outputs []*schema              // per step index; nil for steps without output
	envs    []*condition.Env       // per step index; nil for steps without conditions
	conds   [][]*condition.Program // per step index
}

// Compile checks a spec (spec.Workflow.Check: the rules lint applies to
// workflow files) and compiles its schemas and conditions. Generated specs
// always compile;
// an error here means a hand-written or corrupted spec.
func Compile(spec *WorkflowSpec) (*Definition, error) {
	if spec == nil {
		return nil, errors.New("compiling workflow: nil spec")
	}
	d := &Definition{spec: spec.Clone()} // the caller may change spec later
	g, err := dag.Build(&d.spec)
	if err != nil {
		return nil, fmt.Errorf("compiling workflow %s: %w", spec.Name, err)
	}
	d.graph = g
	if d.input, err = compileSchema(spec.Name+".input", spec.InputSchema); err != nil {
		return nil, fmt.Errorf("compiling workflow %s: input schema: %w", spec.Name, err)
	}
	d.outputs = make([]*schema, len(g.Steps))
	for i, s := range spec.Steps {
		if s.OutputSchema == "" {
			continue
		}
		if d.outputs[i], err = compileSchema(spec.Name+"."+s.Name+".output", s.OutputSchema); err != nil {
			return nil, fmt.Errorf("compiling workflow %s: step %s: output schema: %w", spec.Name, s.Name, err)
		}
	}
	d.envs = make([]*condition.Env, len(g.Steps))
	d.conds = make([][]*condition.Program, len(g.Steps))
	for i, s := range spec.Steps {
		if len(s.SkipIf) == 0 {
			continue
		}
		parents := make(map[string]json.RawMessage, len(s.Parents))
		for _, p := range s.Parents {
			ps, _ := g.Step(p)
			parents[p] = json.RawMessage(spec.Steps[ps.Index].OutputSchema)
		}
		env, err := condition.NewEnv(json.RawMessage(spec.InputSchema), parents)
		if err != nil {
			return nil, fmt.Errorf("compiling workflow %s: step %s: %w", spec.Name, s.Name, err)
		}
		d.envs[i] = env
		for j, expr := range s.SkipIf {
			prg, issues := env.Compile(expr)
			if len(issues) > 0 {
				return nil, fmt.Errorf("compiling workflow %s: step %s: skipIf[%d] %q: %s",
					spec.Name, s.Name, j, expr, issues[0].Message)
			}
			d.conds[i] = append(d.conds[i], prg)
		}
	}
	canonical, err := json.Marshal(versioned(spec))
	if err != nil {
		return nil, fmt.Errorf("compiling workflow %s: %w", spec.Name, err)
	}
	sum := sha256.Sum256(canonical)
	d.version = spec.Name + "@" + hex.EncodeToString(sum[:8])
	return d, nil
}

// versioned is the part of a spec that identifies its version: everything
// but the source path and description, which do not change behaviour.
func versioned(spec *WorkflowSpec) WorkflowSpec {
	v := *spec
	v.Source, v.Description = "", ""
	return v
}

// Name is the workflow's name.
func (d *Definition) Name() string { return d.spec.Name }

// Version identifies this exact definition: runs remember the version they
// were created with, so a changed workflow file never reinterprets a run
// already in flight.
func (d *Definition) Version() string { return d.version }

// Spec returns a copy of the spec the definition was compiled from;
// changing it changes nothing here.
func (d *Definition) Spec() WorkflowSpec { return d.spec.Clone() }

// StepNames returns the names of the workflow's steps by index, the
// numbering a store gives a run's tasks (store.TaskKey.Step): the steps
// in the order of the workflow file, then the failure handler, if any.
func (d *Definition) StepNames() []string {
	names := make([]string, len(d.graph.Steps))
	for i, s := range d.graph.Steps {
		names[i] = s.Name
	}
	return names
}

// ValidateInput checks a run input against the input schema. The error
// names every offending field by its path (input.items[0].sku).
func (d *Definition) ValidateInput(input json.RawMessage) error {
	problems, err := d.input.problems("input", input)
	if err != nil {
		return fmt.Errorf("validating input of %s: %w", d.spec.Name, err)
	}
	if len(problems) > 0 {
		return &InputError{Workflow: d.spec.Name, Problems: problems}
	}
	return nil
}

// ValidateOutput checks what a step returned against its output schema;
// a step without one accepts anything. The error names the step and every
// offending field by its path (output.items[0].sku).
func (d *Definition) ValidateOutput(step string, output json.RawMessage) error {
	s, ok := d.graph.Step(step)
	if !ok {
		return fmt.Errorf("workflow %s has no step %s", d.spec.Name, step)
	}
	return d.validateOutput(s.Index, output)
}

func (d *Definition) validateOutput(step int, output json.RawMessage) error {
	sch := d.outputs[step]
	if sch == nil {
		return nil
	}
	if len(output) == 0 {
		output = json.RawMessage("null")
	}
	name := d.graph.Steps[step].Name
	problems, err := sch.problems("output", output)
	if err != nil {
		return fmt.Errorf("validating the output of step %s: %w", name, err)
	}
	if len(problems) > 0 {
		return &OutputError{Workflow: d.spec.Name, Step: name, Problems: problems}
	}
	return nil
}

// conditions returns the compiled skipIf programs of a step and the
// environment to bind their variables in.
func (d *Definition) conditions(step int) (*condition.Env, []*condition.Program) {
	return d.envs[step], d.conds[step]
}
