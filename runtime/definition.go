package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime/internal/dag"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/condition"
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
	// priority gives each run's priority; nil for the default.
	priority *condition.IntExpr
	// limits holds each step's concurrency limit (its own, or the
	// workflow's); nil for steps without one.
	limits []*limit
	// rates holds each step's rate limit (its own, or the workflow's);
	// nil for steps without one.
	rates []*rate
	// runLimit is the workflow's limit on whole runs; nil for none.
	runLimit *runLimit
	// debounce is the workflow's debounce; nil for none.
	debounce *debounce
	// schedules are the compiled cron schedules (see schedules.go).
	schedules []schedule
	// items holds the compiled forEach of each map step, and itemDefs
	// the workflow of its items (see maps.go); nil for other steps.
	items    []*condition.ListExpr
	itemDefs []*Definition
	// childInputs holds the input expressions of each child workflow
	// step that has them, by input field (see children.go); nil for
	// other steps.
	childInputs []map[string]*condition.ValueExpr
	// events are the compiled payload schemas of the workflow's events,
	// by name, and waitKeys the key of each wait step that has one (see
	// waits.go).
	events   map[string]*schema
	waitKeys []*condition.KeyExpr
	// startOn are the compiled startOn entries (see startevents.go).
	startOn []startOn
	// stepLabels are the worker labels each step's tasks need (runsOn),
	// by step index; nil when none does (see labels.go).
	stepLabels [][]string
}

// runLimit is a compiled run concurrency limit: runs whose key values
// are equal share its max slots (see store.RunLimit). Its scope is the
// workflow's name and "@runs", which no step limit's scope can be.
type runLimit struct {
	scope    string
	key      *condition.KeyExpr
	max      int
	strategy string
}

// debounce is a compiled debounce (see store.Debounce); its scope is
// the workflow's name and "@debounce".
type debounce struct {
	scope           string
	key             *condition.KeyExpr
	window, maxWait time.Duration
}

// limit is a compiled concurrency limit: tasks whose runs' key values are
// equal share its Max slots. scope names what shares them, the workflow
// or one of its steps, so that equal key values of different workflows
// or steps do not.
type limit struct {
	scope string
	key   *condition.KeyExpr
	max   int
}

// rate is a compiled rate limit: tasks whose runs' key values are equal
// (all tasks, when key is nil) start at most once per interval, burst
// at once after a quiet spell. scope is as for limit.
type rate struct {
	scope    string
	key      *condition.KeyExpr
	interval time.Duration
	burst    int
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
	d.spec.FillWaitOutputs()
	spec = &d.spec
	g, err := dag.Build(&d.spec)
	if err != nil {
		return nil, fmt.Errorf("compiling workflow %s: %w", spec.Name, err)
	}
	d.graph = g
	d.stepLabels = stepLabels(spec)
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
		if len(s.SkipIf) == 0 && !s.IsMap() && !(s.IsChild() && len(s.Workflow.Input) > 0) {
			continue
		}
		parents := make(map[string]json.RawMessage, len(s.Parents))
		for _, p := range s.Parents {
			ps, _ := g.Step(p)
			parents[p] = json.RawMessage(spec.Steps[ps.Index].ResultSchema())
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
		if s.IsMap() {
			if err := d.compileMap(i, env); err != nil {
				return nil, err
			}
		}
		if s.IsChild() {
			if err := d.compileChild(i, env); err != nil {
				return nil, err
			}
		}
	}
	// One environment serves the priority, every limit's key and every
	// wait's key; it is built when one of them needs it.
	var inputEnv *condition.InputEnv
	newInputEnv := func() (*condition.InputEnv, error) {
		if inputEnv == nil {
			var err error
			if inputEnv, err = condition.NewInputEnv(json.RawMessage(spec.InputSchema)); err != nil {
				return nil, fmt.Errorf("compiling workflow %s: %w", spec.Name, err)
			}
		}
		return inputEnv, nil
	}
	if err := d.compileEvents(newInputEnv); err != nil {
		return nil, err
	}
	if spec.Priority != "" || hasLimits(spec) {
		env, err := newInputEnv()
		if err != nil {
			return nil, err
		}
		if d.priority, err = compilePriority(spec, env); err != nil {
			return nil, err
		}
		if d.limits, err = compileLimits(spec, len(g.Steps), env); err != nil {
			return nil, err
		}
		if d.rates, err = compileRates(spec, len(g.Steps), env); err != nil {
			return nil, err
		}
		if l := spec.RunConcurrency; l != nil {
			x, issues := env.CompileKey(l.Key)
			if len(issues) > 0 {
				return nil, fmt.Errorf("compiling workflow %s: runConcurrency: key %q: %s", spec.Name, l.Key, issues[0].Message)
			}
			d.runLimit = &runLimit{scope: spec.Name + "@runs", key: x, max: l.Max, strategy: string(l.Effective())}
		}
		if db := spec.Debounce; db != nil {
			x, issues := env.CompileKey(db.Key)
			if len(issues) > 0 {
				return nil, fmt.Errorf("compiling workflow %s: debounce: key %q: %s", spec.Name, db.Key, issues[0].Message)
			}
			d.debounce = &debounce{scope: spec.Name + "@debounce", key: x, window: db.Window, maxWait: db.MaxWait}
		}
	}
	if err := d.compileSchedules(); err != nil {
		return nil, err
	}
	if err := d.compileStartOn(); err != nil {
		return nil, err
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

// compilePriority compiles a spec's priority expression; nil when it has
// none.
func compilePriority(spec *WorkflowSpec, env *condition.InputEnv) (*condition.IntExpr, error) {
	if spec.Priority == "" {
		return nil, nil
	}
	x, issues := env.CompileInt(spec.Priority)
	if len(issues) > 0 {
		return nil, fmt.Errorf("compiling workflow %s: priority %q: %s", spec.Name, spec.Priority, issues[0].Message)
	}
	if p, ok := x.Constant(context.Background()); ok && !ValidPriority(int(p)) {
		return nil, fmt.Errorf("compiling workflow %s: priority %d is out of range: use 1 (low), 2 (normal) or 3 (high)", spec.Name, p)
	}
	return x, nil
}

// hasLimits reports whether a spec declares a concurrency or a rate
// limit.
func hasLimits(spec *WorkflowSpec) bool {
	return spec.Concurrency != nil || spec.RateLimit != nil || spec.RunConcurrency != nil || spec.Debounce != nil || slices.ContainsFunc(spec.Steps, func(s StepSpec) bool {
		return s.Concurrency != nil || s.RateLimit != nil
	})
}

// perStep compiles a setting that a workflow declares for its code steps
// and a step may replace with its own (a concurrency or a rate limit):
// it returns each step's compiled setting, the step's own or else the
// workflow's (shared, not copied), nil for steps with neither, for sleep
// and wait steps (no code, nothing to limit), and for child workflow
// steps without one of their own (which wait for a run that has limits
// of its own); nil when no step has one. compile gets the scope that
// names what shares the setting's keys: the workflow, or one step.
func perStep[S any, C any](spec *WorkflowSpec, steps int, shared *S, own func(*StepSpec) *S, compile func(s *S, scope, what string) (*C, error)) ([]*C, error) {
	var wide *C
	if shared != nil {
		var err error
		if wide, err = compile(shared, spec.Name, ""); err != nil {
			return nil, err
		}
	}
	var out []*C
	for i := range spec.Steps {
		s := &spec.Steps[i]
		if s.IsSleep() || s.IsWait() {
			continue
		}
		c := wide
		if s.IsChild() {
			c = nil
		}
		if o := own(s); o != nil {
			var err error
			if c, err = compile(o, spec.Name+"/"+s.Name, "step "+s.Name+": "); err != nil {
				return nil, err
			}
		}
		if c == nil {
			continue
		}
		if out == nil {
			out = make([]*C, steps)
		}
		out[i] = c
	}
	return out, nil
}

// compileLimits compiles the concurrency limits of a spec's steps (see
// perStep).
func compileLimits(spec *WorkflowSpec, steps int, env *condition.InputEnv) ([]*limit, error) {
	return perStep(spec, steps, spec.Concurrency, func(s *StepSpec) *ConcurrencySpec { return s.Concurrency },
		func(c *ConcurrencySpec, scope, what string) (*limit, error) {
			x, issues := env.CompileKey(c.Key)
			if len(issues) > 0 {
				return nil, fmt.Errorf("compiling workflow %s: %sconcurrency: key %q: %s", spec.Name, what, c.Key, issues[0].Message)
			}
			return &limit{scope: scope, key: x, max: c.Max}, nil
		})
}

// compileRates compiles the rate limits of a spec's steps (see perStep).
func compileRates(spec *WorkflowSpec, steps int, env *condition.InputEnv) ([]*rate, error) {
	return perStep(spec, steps, spec.RateLimit, func(s *StepSpec) *RateLimitSpec { return s.RateLimit },
		func(c *RateLimitSpec, scope, what string) (*rate, error) {
			r := &rate{scope: scope, interval: c.Interval(), burst: c.Bursts()}
			if c.Key == "" {
				return r, nil
			}
			x, issues := env.CompileKey(c.Key)
			if len(issues) > 0 {
				return nil, fmt.Errorf("compiling workflow %s: %srateLimit: key %q: %s", spec.Name, what, c.Key, issues[0].Message)
			}
			r.key = x
			return r, nil
		})
}

// keyValues evaluates key expressions on one run input, each once
// however many steps share it.
type keyValues struct {
	ctx    context.Context
	input  json.RawMessage
	values map[*condition.KeyExpr]string
}

func (k *keyValues) of(x *condition.KeyExpr) (string, error) {
	if x == nil {
		return "", nil
	}
	if v, ok := k.values[x]; ok {
		return v, nil
	}
	v, err := x.Eval(k.ctx, k.input)
	if err != nil {
		return "", err
	}
	if k.values == nil {
		k.values = map[*condition.KeyExpr]string{}
	}
	k.values[x] = v
	return v, nil
}

// hasLimits reports whether some step of d has a concurrency or a rate
// limit.
func (d *Definition) hasLimits() bool { return d.limits != nil || d.rates != nil }

// taskLimits sets the concurrency and rate limits of a run's tasks for
// its (valid) input; tasks must be the run's own copy.
func (d *Definition) taskLimits(ctx context.Context, input json.RawMessage, tasks []store.NewTask) error {
	keys := keyValues{ctx: ctx, input: input}
	for i, l := range d.limits {
		if l == nil {
			continue
		}
		v, err := keys.of(l.key)
		if err != nil {
			return fmt.Errorf("workflow %s: concurrency key: %w", d.spec.Name, err)
		}
		tasks[i].Limit = store.Limit{Key: l.scope + ":" + storedKey(v), Max: l.max}
	}
	for i, r := range d.rates {
		if r == nil {
			continue
		}
		v, err := keys.of(r.key)
		if err != nil {
			return fmt.Errorf("workflow %s: rate limit key: %w", d.spec.Name, err)
		}
		tasks[i].Rate = store.Rate{Key: r.scope + ":" + storedKey(v), Interval: r.interval, Burst: r.burst}
	}
	return nil
}

// runLimitOf is the run concurrency limit of a run of d with the given
// (valid) input; zero when d has none.
func (d *Definition) runLimitOf(ctx context.Context, input json.RawMessage) (store.RunLimit, error) {
	l := d.runLimit
	if l == nil {
		return store.RunLimit{}, nil
	}
	v, err := l.key.Eval(ctx, input)
	if err != nil {
		return store.RunLimit{}, fmt.Errorf("workflow %s: runConcurrency key: %w", d.spec.Name, err)
	}
	return store.RunLimit{Key: l.scope + ":" + storedKey(v), Max: l.max, Strategy: l.strategy}, nil
}

// debounceOf is the debounce of a run of d with the given (valid)
// input; zero when d has none.
func (d *Definition) debounceOf(ctx context.Context, input json.RawMessage) (store.Debounce, error) {
	db := d.debounce
	if db == nil {
		return store.Debounce{}, nil
	}
	v, err := db.key.Eval(ctx, input)
	if err != nil {
		return store.Debounce{}, fmt.Errorf("workflow %s: debounce key: %w", d.spec.Name, err)
	}
	return store.Debounce{Key: db.scope + ":" + storedKey(v), Window: db.window, MaxWait: db.maxWait}, nil
}

// runPriority is the priority of a run of d with the given (valid)
// input: the workflow's priority expression's value, or PriorityNormal
// when it has none.
func (d *Definition) runPriority(ctx context.Context, input json.RawMessage) (int, error) {
	if d.priority == nil {
		return PriorityNormal, nil
	}
	p, err := d.priority.Eval(ctx, input)
	if err != nil {
		return 0, fmt.Errorf("workflow %s: priority: %w", d.spec.Name, err)
	}
	if !ValidPriority(int(p)) {
		return 0, fmt.Errorf("workflow %s: priority %q is %d for this input; a priority is 1 (low), 2 (normal) or 3 (high)", d.spec.Name, d.spec.Priority, p)
	}
	return int(p), nil
}

// conditions returns the compiled skipIf programs of a step and the
// environment to bind their variables in.
func (d *Definition) conditions(step int) (*condition.Env, []*condition.Program) {
	return d.envs[step], d.conds[step]
}
