package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/termtext"
	"github.com/effectivelabs/trellis/gen"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/schema/spec"
)

// againstEnv is the value of -against that names $TRELLIS_DATABASE_URL,
// so that a password need not be on the command line.
const againstEnv = "env"

// maxAccepts bounds the -accept flags.
const maxAccepts = 100

// accept is one -accept: a kind of change, for every workflow or one,
// and for every step of it or one.
type accept struct {
	kind           spec.ChangeKind
	workflow, step string
	text           string
}

// parseAccept reads kind[:workflow[.step]].
func parseAccept(s string) (accept, error) {
	if len(s) > 300 {
		return accept{}, fmt.Errorf("-accept %.40q...: too long", s)
	}
	a := accept{text: s}
	kind, target, _ := strings.Cut(s, ":")
	a.kind = spec.ChangeKind(kind)
	if !a.kind.Valid() {
		var names []string
		for _, k := range spec.ChangeKinds() {
			names = append(names, string(k))
		}
		return accept{}, fmt.Errorf("-accept %q: unknown kind of change %q (kinds: %s)", s, kind, strings.Join(names, ", "))
	}
	a.workflow, a.step, _ = strings.Cut(target, ".")
	if strings.Contains(s, ":") && a.workflow == "" {
		return accept{}, fmt.Errorf("-accept %q: no workflow after the colon: write kind, kind:workflow or kind:workflow.step", s)
	}
	if strings.Contains(target, ".") && a.step == "" {
		return accept{}, fmt.Errorf("-accept %q: no step after the dot: write kind, kind:workflow or kind:workflow.step", s)
	}
	return a, nil
}

// matches reports whether the accept covers a finding.
func (a accept) matches(f finding) bool {
	return a.kind == f.kind && (a.workflow == "" || a.workflow == f.workflow) && (a.step == "" || a.step == f.step)
}

// finding is one change that runs in progress notice.
type finding struct {
	kind           spec.ChangeKind
	workflow, step string
	problem        gen.Problem
}

// acceptList is the repeatable -accept flag.
type acceptList struct{ list *[]string }

func (a acceptList) String() string {
	if a.list == nil {
		return ""
	}
	return strings.Join(*a.list, ",")
}

func (a acceptList) Set(s string) error {
	if len(*a.list) >= maxAccepts {
		return fmt.Errorf("more than %d -accept flags", maxAccepts)
	}
	if _, err := parseAccept(s); err != nil {
		return err
	}
	*a.list = append(*a.list, s)
	return nil
}

// againstResult is what checking files against a database found.
type againstResult struct {
	problems, notes []gen.Problem
	versions, runs  int
}

// errAgainstUsage marks an error of -against that is the user's to fix
// (no database, no schema): exit 2.
var errAgainstUsage = errors.New("usage")

// checkAgainst compares each clean file with the versions of its
// workflow that have runs in progress in the database at url.
func checkAgainst(ctx context.Context, opts LintOptions, files []*gen.File, stderr *strings.Builder) (againstResult, error) {
	url := opts.Against
	if url == againstEnv {
		url = os.Getenv("TRELLIS_DATABASE_URL")
		if url == "" {
			return againstResult{}, fmt.Errorf("%w: -against env: $TRELLIS_DATABASE_URL is not set", errAgainstUsage)
		}
	}
	var accepts []accept
	for _, s := range opts.Accept {
		a, err := parseAccept(s)
		if err != nil {
			return againstResult{}, fmt.Errorf("%w: %w", errAgainstUsage, err)
		}
		accepts = append(accepts, a)
	}
	pool, err := pgstore.Connect(ctx, url)
	if err != nil {
		return againstResult{}, fmt.Errorf("%w: %w", errAgainstUsage, pgstore.RedactErr(err, url))
	}
	defer pool.Close()
	states, err := pgstore.MigrationStatus(ctx, pool)
	if err != nil {
		return againstResult{}, fmt.Errorf("%w: %w", errAgainstUsage, pgstore.RedactErr(err, url))
	}
	if !slices.ContainsFunc(states, func(s pgstore.MigrationState) bool { return s.AppliedAt != nil }) {
		return againstResult{}, fmt.Errorf("%w: the database has no Trellis schema (check the connection string and its search_path; trellis migrate up creates one)", errAgainstUsage)
	}
	engine, err := runtime.New(runtime.Config{Store: pgstore.New(pool)})
	if err != nil {
		return againstResult{}, err
	}
	admin := ops.New(engine)
	flight, err := admin.InFlight(ctx, opts.AgainstLimit)
	if err != nil {
		return againstResult{}, pgstore.RedactErr(err, url)
	}
	limit := opts.AgainstLimit
	if limit <= 0 {
		limit = store.DefaultInFlightLimit
	}
	if flight.More {
		fmt.Fprintf(stderr, "trellis lint: more than %d workflow versions have runs in progress: checked the first %d by name (raise -against-limit to check more)\n", limit, limit)
	}
	var res againstResult
	for _, v := range flight.Versions {
		res.versions++
		res.runs += v.Runs
	}
	var found []finding
	for _, f := range files {
		w := f.Spec()
		if w == nil {
			continue
		}
		found = append(found, checkFile(f, w, flight, stderr)...)
	}
	for _, fd := range found {
		i := slices.IndexFunc(accepts, func(a accept) bool { return a.matches(fd) })
		if i < 0 {
			res.problems = append(res.problems, fd.problem)
			continue
		}
		note := fd.problem
		note.Message = "accepted (-accept " + accepts[i].text + "): " + note.Message
		res.notes = append(res.notes, note)
	}
	res.problems, res.notes = sortedProblems(res.problems), sortedProblems(res.notes)
	return res, nil
}

func sortedProblems(ps []gen.Problem) []gen.Problem {
	slices.SortStableFunc(ps, func(a, b gen.Problem) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		if a.Column != b.Column {
			return a.Column - b.Column
		}
		return strings.Compare(a.Message, b.Message)
	})
	return ps
}

// checkFile finds what the workflow of one file (w, as it is now)
// changes that runs in progress notice.
func checkFile(f *gen.File, w *spec.Workflow, flight ops.InFlight, stderr *strings.Builder) []finding {
	var out []finding
	add := func(kind spec.ChangeKind, step string, pos gen.Pos, format string, args ...any) {
		out = append(out, finding{kind: kind, workflow: w.Name, step: step, problem: gen.Problem{
			File: f.Path, Line: pos.Line, Column: pos.Column, Message: string(kind) + ": " + fmt.Sprintf(format, args...),
		}})
	}
	def, err := runtime.Compile(w)
	if err != nil {
		add(spec.ChangeInput, "", f.NamePos(), "the workflow does not compile for the engine: %v", err)
		return out
	}
	for i := range flight.Versions {
		v := &flight.Versions[i]
		if v.Name != w.Name || v.Version == def.Version() {
			continue
		}
		if v.Spec == nil {
			fmt.Fprintf(stderr, "trellis lint: %s has %s in progress, not checked: %s\n", termtext.Line(v.Version), plural(v.Runs, "run"), v.SpecError)
			continue
		}
		for _, c := range spec.Compare(v.Spec, w) {
			if !c.Breaking {
				continue
			}
			step := c.NewStep
			if step == "" {
				step = c.Step
			}
			switch c.Kind {
			case spec.ChangeStepRemoved, spec.ChangeStepRenamed, spec.ChangeStepKind, spec.ChangeParents:
				n := v.StepRuns(stepIndex(v.Spec, c.Step))
				if n == 0 {
					continue
				}
				pos := f.StepPos(c.NewStep, false)
				if c.NewStep == "" {
					pos = f.NamePos()
				}
				add(c.Kind, step, pos, "%s; %s of %s in progress %s not finished step %s", c.Message, plural(n, "run"), v.Version, have(n), c.Step)
			case spec.ChangeOutput, spec.ChangeChild:
				n, by := v.StepRuns(stepIndex(v.Spec, c.Step)), c.Step
				if n == 0 {
					n, by = readers(v, c.Step)
				}
				if n == 0 {
					continue
				}
				what := "step " + by
				if by != c.Step {
					what += ", which reads its output"
				}
				add(c.Kind, step, f.StepPos(c.NewStep, true), "%s; %s of %s in progress %s not finished %s", c.Message, plural(n, "run"), v.Version, have(n), what)
			case spec.ChangeEvent:
				n, wait := waiters(v, c.Event)
				if n == 0 {
					continue
				}
				pos := f.EventPos(c.Event)
				if c.NewStep != "" {
					pos = f.StepPos(c.NewStep, false)
				}
				add(c.Kind, step, pos, "%s; %s of %s in progress wait or will wait for it (step %s)", c.Message, plural(n, "run"), v.Version, wait)
			}
		}
	}
	// The schedules created at run time: their inputs must suit the new
	// input schema.
	for _, s := range flight.Schedules {
		if s.Workflow != w.Name {
			continue
		}
		if err := def.ValidateInput(s.Input); err != nil {
			add(spec.ChangeInput, "", f.InputPos(), "schedule %s (created at run time) starts runs with an input the input schema refuses: %s",
				termtext.Line(s.Name), termtext.Line(firstLine(err.Error())))
		}
	}
	// Runs in progress of other workflows that start this one.
	for i := range flight.Versions {
		v := &flight.Versions[i]
		if v.Spec == nil {
			continue
		}
		for si := range v.Spec.Steps {
			st := &v.Spec.Steps[si]
			if !st.IsChild() || st.Workflow.Name != w.Name {
				continue
			}
			n := v.StepRuns(si)
			if n == 0 {
				continue
			}
			for _, c := range spec.ChildContract(st, w) {
				add(c.Kind, "", f.InputPos(), "%s (in workflow %s); %s of %s in progress %s not finished step %s, which starts workflow %s",
					c.Message, v.Name, plural(n, "run"), v.Version, have(n), st.Name, w.Name)
			}
		}
	}
	return out
}

func have(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "..."
	}
	return s
}

// stepIndex is the index of the step named name in w, or -1.
func stepIndex(w *spec.Workflow, name string) int {
	return slices.IndexFunc(w.Steps, func(s spec.Step) bool { return s.Name == name })
}

// readers returns the step of v that has step as a parent with the most
// runs in progress not finished, and how many.
func readers(v *ops.VersionInFlight, step string) (int, string) {
	best, name := 0, ""
	for i, s := range v.Spec.Steps {
		if slices.Contains(s.Parents, step) {
			if n := v.StepRuns(i); n > best {
				best, name = n, s.Name
			}
		}
	}
	return best, name
}

// waiters returns the wait step of v for event with the most runs in
// progress not finished, and how many.
func waiters(v *ops.VersionInFlight, event string) (int, string) {
	best, name := 0, ""
	for i, s := range v.Spec.Steps {
		if s.IsWait() && s.WaitFor.Event == event {
			if n := v.StepRuns(i); n > best {
				best, name = n, s.Name
			}
		}
	}
	return best, name
}
