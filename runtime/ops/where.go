package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/condition"
	"github.com/effectivelabs/trellis/runtime/store"
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
	// The conditions on status, tenant and creation read no schema, so
	// every version's are the same; a document an input must contain
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
	q.InputContains = p.InputContains
	q.WithInput = true
	return true
}

// match evaluates the filter on a run of one of its versions.
func (w *where) match(ctx context.Context, r store.Run) (bool, error) {
	f := w.byVersion[r.Version]
	if f == nil {
		return false, nil
	}
	ok, err := f.Match(ctx, condition.RunFacts{Input: r.Input, Status: string(r.Status), Tenant: r.Tenant, Created: r.CreatedAt})
	if err != nil {
		return false, fmt.Errorf("where, on run %s: %w", r.ID, err)
	}
	return ok, nil
}

// listWhere reads up to limit+1 runs that q selects and the filter
// matches, scanning at most whereScan candidates. It returns them and,
// when the scan stopped early, the position it reached.
func (a *Admin) listWhere(ctx context.Context, w *where, q store.RunQuery, limit int) ([]store.Run, *store.RunCursor, error) {
	if !w.narrow(&q) {
		return nil, nil, nil
	}
	var out []store.Run
	for scanned := 0; scanned < whereScan; scanned += whereBatch {
		q.Limit = whereBatch
		batch, reached, err := a.store.ScanRuns(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		for _, r := range batch {
			ok, err := w.match(ctx, r)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				continue
			}
			r.Input = nil
			if out = append(out, r); len(out) > limit {
				return out, nil, nil
			}
		}
		if reached == nil {
			return out, nil, nil
		}
		q.After = reached
	}
	return out, q.After, nil
}

// Select returns the id of every run the filter selects, from its After
// on, newest first, whatever its Limit: what a bulk cancel or retry acts
// on. It reads the listing a page at a time.
func (a *Admin) Select(ctx context.Context, f RunFilter) ([]runtime.RunID, error) {
	f.Limit = MaxLimit
	var ids []runtime.RunID
	for {
		page, err := a.ListRuns(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Runs {
			ids = append(ids, r.ID)
		}
		if page.Next == "" {
			return ids, nil
		}
		f.After = page.Next
	}
}
