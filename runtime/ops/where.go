package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/condition"
)

// Scanning under a Where filter: the store returns candidate runs whereBatch
// at a time, and a page reads at most whereScan of them, so that a filter
// few runs match answers in bounded time; its Next goes on from there.
var (
	whereBatch = 500
	whereScan  = 20_000
)

// WhereError is a Where filter that does not type-check against the
// input schema of the newest stored version of its workflow. It is
// reported before any run is read.
type WhereError struct {
	Expr    string
	Version string
	Issues  []condition.Issue
}

func (e *WhereError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "where %q does not type-check against the input schema of %s:", e.Expr, e.Version)
	for _, i := range e.Issues {
		fmt.Fprintf(&b, "\n  %s", i)
	}
	return b.String()
}

// where is a Where filter compiled for each stored version of a workflow.
type where struct {
	byVersion map[string]*condition.Filter
	push      condition.Pushdown
	// notes say which versions' runs the filter cannot match.
	notes []string
}

// compileWhere type-checks expr against the input schema of each stored
// version of workflow. It must type-check against the newest; a version
// it does not type-check against has its runs left out, with a note.
func (a *Admin) compileWhere(ctx context.Context, workflow, expr string) (*where, error) {
	if workflow == "" {
		return nil, errors.New("where needs a workflow: the expression is type-checked against that workflow's input schema")
	}
	versions, err := a.store.ListWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	versions = slices.DeleteFunc(versions, func(v store.WorkflowVersion) bool { return v.Name != workflow })
	if len(versions) == 0 {
		return nil, fmt.Errorf("where: no version of workflow %q is stored (a workflow is stored when its first run is triggered): nothing to type-check the expression against", workflow)
	}
	w := &where{byVersion: map[string]*condition.Filter{}}
	var pushes []condition.Pushdown
	for i, v := range versions { // newest first
		var spec runtime.WorkflowSpec
		if err := json.Unmarshal(v.Spec, &spec); err != nil {
			return nil, fmt.Errorf("decoding workflow version %s: %w", v.Version, err)
		}
		env, err := condition.NewFilterEnv(json.RawMessage(spec.InputSchema))
		if err != nil {
			return nil, fmt.Errorf("workflow version %s: %w", v.Version, err)
		}
		f, iss := env.Compile(expr)
		if iss == nil {
			iss = readsSensitive(spec.InputSchema, expr)
		}
		switch {
		case iss != nil && i == 0:
			return nil, &WhereError{Expr: expr, Version: v.Version, Issues: iss}
		case iss != nil:
			w.notes = append(w.notes, fmt.Sprintf("runs of %s are left out: where does not type-check against its input schema (%s)", v.Version, iss[0]))
			continue
		}
		w.byVersion[v.Version] = f
		pushes = append(pushes, f.Pushdown())
	}
	// The conditions on status, tenant, creation and tags read no
	// schema, so every version's are the same; a document an input must contain
	// depends on the schema, and is used only when every version agrees.
	w.push = pushes[0]
	for _, p := range pushes[1:] {
		a, _ := json.Marshal(p.InputContains)
		b, _ := json.Marshal(w.push.InputContains)
		if string(a) != string(b) {
			w.push.InputContains = nil
		}
	}
	for _, s := range w.push.Statuses {
		if !slices.Contains(RunStatuses(), runtime.RunStatus(s)) {
			return nil, fmt.Errorf("where: %q is not a run status: use %s", s, statusList())
		}
	}
	return w, nil
}

// narrow adds the filter's necessary conditions to q, reporting false when
// no run can match.
func (w *where) narrow(q *store.RunQuery) bool {
	p := w.push
	if p.Empty {
		return false
	}
	if p.Statuses != nil {
		var keep []runtime.RunStatus
		for _, s := range p.Statuses {
			if st := runtime.RunStatus(s); len(q.Statuses) == 0 || slices.Contains(q.Statuses, st) {
				keep = append(keep, st)
			}
		}
		if len(keep) == 0 {
			return false
		}
		q.Statuses = keep
	}
	if p.Tenant != "" {
		if q.Tenant != "" && q.Tenant != p.Tenant {
			return false
		}
		q.Tenant = p.Tenant
	}
	if !p.CreatedFrom.IsZero() && (q.CreatedFrom.IsZero() || p.CreatedFrom.After(q.CreatedFrom)) {
		q.CreatedFrom = p.CreatedFrom
	}
	if !p.CreatedTo.IsZero() && (q.CreatedTo.IsZero() || p.CreatedTo.Before(q.CreatedTo)) {
		q.CreatedTo = p.CreatedTo
	}
	if !q.CreatedFrom.IsZero() && !q.CreatedTo.IsZero() && !q.CreatedFrom.Before(q.CreatedTo) {
		return false
	}
	for k, v := range p.Tags {
		if old, ok := q.Tags[k]; ok && old != v {
			return false
		}
	}
	if len(p.Tags) > 0 {
		q.Tags = store.MergeTags(q.Tags, p.Tags)
	}
	q.InputContains = p.InputContains
	q.WithInput = true
	return true
}

// match evaluates the filter on a run of one of its versions, and returns
// the evaluation's cost. An error is the run's: its input does not fit the
// version's schema, or the evaluation failed.
func (w *where) match(ctx context.Context, r store.Run) (bool, uint64, error) {
	f := w.byVersion[r.Version]
	if f == nil {
		return false, 0, nil
	}
	return f.Match(ctx, condition.RunFacts{Input: r.Input, Status: string(r.Status), Tenant: r.Tenant, Created: r.CreatedAt, Tags: r.Tags})
}

// Unevaluated is a run a Where filter could not be evaluated on: its
// stored input does not fit the input schema of its version (stored by an
// older version of the code, written by hand, or holding a value the
// filter cannot represent, such as 1e30 for an integer or a leap second),
// or the evaluation failed (a division by zero, the per-evaluation cost
// limit). Such a run counts as not matching: a listing leaves it out and
// a bulk action never acts on it.
type Unevaluated struct {
	Run runtime.RunID `json:"run"`
	// Reason says why, shortened to reasonMax bytes.
	Reason string `json:"reason"`
}

// unevaluatedShown is how many Unevaluated runs a page or a selection
// names; it counts the others. reasonMax bounds each reason, which may
// quote a stored value of any size.
const (
	unevaluatedShown = 3
	reasonMax        = 200
)

// Why a page under Where stopped before reading every run it could
// (RunPage.Stopped).
const (
	StoppedBudget   = "budget"
	StoppedDeadline = "deadline"
)

// whereReport is what a Where scan met beside its matches.
type whereReport struct {
	unevaluated int
	examples    []Unevaluated
	evaluated   int
	cost        uint64
	stopped     string // StoppedBudget, StoppedDeadline or empty
}

func (rep *whereReport) unevaluable(id runtime.RunID, err error) {
	rep.unevaluated++
	if len(rep.examples) < unevaluatedShown {
		rep.examples = append(rep.examples, Unevaluated{Run: id, Reason: shorten(err.Error(), reasonMax)})
	}
}

// shorten cuts s to at most n bytes, on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "") + "…"
}

// unevaluatedNote says how many runs a filter could not be evaluated on,
// naming the first few.
func unevaluatedNote(n int, examples []Unevaluated) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s could not be evaluated and %s left out, as not matching:", n, plural(n, "run"), map[bool]string{true: "is", false: "are"}[n == 1])
	for _, u := range examples {
		fmt.Fprintf(&b, " run %s: %s;", u.Run, u.Reason)
	}
	if more := n - len(examples); more > 0 {
		fmt.Fprintf(&b, " and %d more", more)
	}
	return strings.TrimSuffix(b.String(), ";")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// listWhere reads up to limit+1 runs that q selects and the filter
// matches, scanning at most whereScan candidates, spending at most the
// Admin's WhereBudget on evaluations and reading for at most its
// WhereTimeout. It returns them and, when the scan stopped early, the
// position it reached. A run the filter cannot be evaluated on is left
// out and reported. Every page evaluates at least one run, so that a
// listing walked with Next always ends.
func (a *Admin) listWhere(ctx context.Context, w *where, q store.RunQuery, limit int) ([]store.Run, *store.RunCursor, *whereReport, error) {
	rep := &whereReport{}
	if !w.narrow(&q) {
		return nil, nil, rep, nil
	}
	clk := a.engine.Clock()
	deadline := clk.Now().Add(a.cfg.WhereTimeout)
	// over reports whether the page must stop before reading on.
	over := func() bool {
		switch {
		case rep.evaluated == 0:
		case rep.cost >= a.cfg.WhereBudget:
			rep.stopped = StoppedBudget
		case !clk.Now().Before(deadline):
			rep.stopped = StoppedDeadline
		}
		return rep.stopped != ""
	}
	var out []store.Run
	for scanned := 0; scanned < whereScan; scanned += whereBatch {
		if over() {
			return out, q.After, rep, nil
		}
		q.Limit = whereBatch
		batch, reached, err := a.store.ScanRuns(ctx, q)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, r := range batch {
			if over() {
				return out, q.After, rep, nil
			}
			ok, cost, err := w.match(ctx, r)
			rep.evaluated++
			rep.cost += cost
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, nil, ctx.Err()
				}
				rep.unevaluable(r.ID, err)
			}
			c := store.CursorOf(r)
			q.After = &c
			if !ok {
				continue
			}
			r.Input = nil
			if out = append(out, r); len(out) > limit {
				return out, nil, rep, nil
			}
		}
		if reached == nil {
			return out, nil, rep, nil
		}
		q.After = reached
	}
	return out, q.After, rep, nil
}

// Selection is every run a filter selects: what a bulk cancel or retry
// acts on.
type Selection struct {
	Runs []runtime.RunID `json:"runs"`
	// Unevaluated counts the runs the filter's Where could not be
	// evaluated on, which are not selected; UnevaluatedRuns names the
	// first few.
	Unevaluated     int           `json:"unevaluated,omitempty"`
	UnevaluatedRuns []Unevaluated `json:"unevaluatedRuns,omitempty"`
	// Notes say which runs the Where filter cannot match (see
	// RunPage.Notes), once each.
	Notes []string `json:"notes,omitempty"`
}

// Select returns every run the filter selects, from its After on, newest
// first, whatever its Limit: what a bulk cancel or retry acts on. It reads
// the listing a page at a time, each page under the Admin's bounds, and
// goes on where a page stopped; a run the Where filter cannot be evaluated
// on is never selected, only counted.
func (a *Admin) Select(ctx context.Context, f RunFilter) (*Selection, error) {
	f.Limit = MaxLimit
	sel := &Selection{}
	for {
		page, err := a.ListRuns(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Runs {
			sel.Runs = append(sel.Runs, r.ID)
		}
		sel.Unevaluated += page.Unevaluated
		for _, u := range page.UnevaluatedRuns {
			if len(sel.UnevaluatedRuns) < unevaluatedShown {
				sel.UnevaluatedRuns = append(sel.UnevaluatedRuns, u)
			}
		}
		if sel.Notes == nil {
			sel.Notes = page.versionNotes
		}
		if page.Next == "" {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f.After = page.Next
	}
	if sel.Unevaluated > 0 {
		sel.Notes = append(sel.Notes, unevaluatedNote(sel.Unevaluated, sel.UnevaluatedRuns))
	}
	return sel, nil
}
