package ops

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec/graph"
)

// Page sizes of ListRuns.
const (
	// DefaultLimit is the page size when a filter sets none.
	DefaultLimit = 50
	// MaxLimit is the largest page ListRuns returns.
	MaxLimit = 1000
)

// RunStatuses returns the statuses a run can have, in the order of its
// life.
func RunStatuses() []runtime.RunStatus {
	return []runtime.RunStatus{runtime.RunRunning, runtime.RunCompleted, runtime.RunFailed, runtime.RunCancelled}
}

// RunFilter selects runs for ListRuns. Every field is optional.
type RunFilter struct {
	Workflow string
	// Statuses keeps runs in any of these statuses.
	Statuses       []runtime.RunStatus
	Tenant         string
	IdempotencyKey string
	// CreatedFrom keeps runs created at or after it; CreatedTo those
	// created before it.
	CreatedFrom time.Time
	CreatedTo   time.Time
	// FinishedFrom keeps runs that finished (completed, failed or were
	// cancelled) at or after it, whenever they were created; a run retried
	// since has no finish time until it ends again. The order stays the
	// creation order.
	FinishedFrom time.Time
	// Parent keeps the runs started by the steps of that run: the items of
	// its map steps and the runs of its child workflow steps.
	Parent runtime.RunID
	// TopLevel keeps the runs no step started, leaving out map items and
	// child workflow runs: a listing that shows those beneath their
	// parents (ChildRuns) instead.
	TopLevel bool
	// IDPrefix keeps the runs whose ids begin with it: the start of a run
	// id, at least MinRunIDPrefix hex digits, with or without dashes, in
	// any case (see CheckRunRef); a whole id selects its run.
	IDPrefix string
	// Tags keeps the runs that carry every one of these tags with the
	// same value (see runtime.Tags); a store reads them through an index.
	Tags map[string]string
	// Where is a CEL expression over the run's input, status, tenant,
	// created and tags (see condition.FilterEnv), type-checked against the input
	// schema of Workflow, which it needs. A page under Where reads at most
	// 20,000 runs, and evaluates the filter within the Admin's Config
	// (a CEL budget and a time limit), so it may hold fewer than Limit
	// runs and still have a Next. A run the filter cannot be evaluated on
	// is left out and counted (RunPage.Unevaluated).
	Where string
	// After is the Next of the previous page, to continue a listing.
	After string
	// Limit is the page size: DefaultLimit when zero, at most MaxLimit.
	Limit int
}

// Validate reports a filter ListRuns refuses, naming the field.
func (f RunFilter) Validate() error {
	var errs []error
	for _, s := range f.Statuses {
		if !slices.Contains(RunStatuses(), s) {
			errs = append(errs, fmt.Errorf("unknown run status %q: use %s", s, statusList()))
		}
	}
	if f.Limit < 0 || f.Limit > MaxLimit {
		errs = append(errs, fmt.Errorf("limit %d is out of range: use 1 to %d", f.Limit, MaxLimit))
	}
	if !f.CreatedFrom.IsZero() && !f.CreatedTo.IsZero() && !f.CreatedFrom.Before(f.CreatedTo) {
		errs = append(errs, fmt.Errorf("the time range is empty: %s is not before %s",
			f.CreatedFrom.UTC().Format(time.RFC3339), f.CreatedTo.UTC().Format(time.RFC3339)))
	}
	if len(f.Tags) > 0 {
		if err := runtime.CheckTags(f.Tags); err != nil {
			errs = append(errs, fmt.Errorf("filtering by tags: %w", err))
		}
	}
	if f.Where != "" && f.Workflow == "" {
		errs = append(errs, errors.New("where needs a workflow: the expression is type-checked against that workflow's input schema"))
	}
	if _, err := ParseCursor(f.After); err != nil {
		errs = append(errs, err)
	}
	if f.IDPrefix != "" {
		if _, err := idPrefix(f.IDPrefix); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func statusList() string {
	var names []string
	for _, st := range RunStatuses() {
		names = append(names, string(st))
	}
	return strings.Join(names, ", ")
}

// Run is a run as listings show it: the store's run row, without its
// input and trace context (nil and empty), times in UTC, the failed step
// of a FAILED run named (Failure.Step).
type Run = store.Run

// RunPage is one page of a listing.
type RunPage struct {
	Runs []Run `json:"runs"`
	// Next continues the listing (RunFilter.After); empty on the last
	// page.
	Next string `json:"next,omitempty"`
	// Notes say, for people, which runs a Where filter cannot match (those
	// of older workflow versions whose input schema it does not
	// type-check against), which it could not be evaluated on, and why a
	// page stopped short.
	Notes []string `json:"notes,omitempty"`
	// Unevaluated counts the runs of this page's scan that the Where
	// filter could not be evaluated on (see Unevaluated): they are left
	// out, as not matching. UnevaluatedRuns names the first few.
	Unevaluated     int           `json:"unevaluated,omitempty"`
	UnevaluatedRuns []Unevaluated `json:"unevaluatedRuns,omitempty"`
	// Stopped is StoppedBudget or StoppedDeadline when a page under Where
	// stopped reading runs because it spent the Admin's WhereBudget or
	// reached its WhereTimeout; Next goes on from the last run it read.
	Stopped string `json:"stopped,omitempty"`

	versionNotes []string // the Notes on versions, for Select
}

// ListRuns returns a page of the runs the filter selects, newest first.
// Pages are by keyset: a listing walked with Next shows every run once,
// however many are created meanwhile (those come before its first page).
func (a *Admin) ListRuns(ctx context.Context, f RunFilter) (*RunPage, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	after, _ := ParseCursor(f.After)
	prefix, _ := idPrefix(f.IDPrefix)
	limit := f.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	q := store.RunQuery{
		Workflow: f.Workflow, Statuses: f.Statuses, Tenant: f.Tenant, IdempotencyKey: f.IdempotencyKey,
		CreatedFrom: f.CreatedFrom, CreatedTo: f.CreatedTo, FinishedFrom: f.FinishedFrom, Parent: f.Parent,
		TopLevel: f.TopLevel, IDPrefix: prefix, Tags: f.Tags, After: after, Limit: limit + 1, // one more: is there a next page?
	}
	var (
		runs    []store.Run
		reached *store.RunCursor // where a Where scan stopped short
		w       *where
		rep     = &whereReport{}
		err     error
	)
	if f.Where != "" {
		if w, err = a.compileWhere(ctx, f.Workflow, f.Where); err != nil {
			return nil, err
		}
		if runs, reached, rep, err = a.listWhere(ctx, w, q, limit); err != nil {
			return nil, err
		}
	} else if runs, err = a.store.ListRuns(ctx, q); err != nil {
		return nil, err
	}
	page := &RunPage{Runs: make([]Run, 0, min(len(runs), limit)), Unevaluated: rep.unevaluated, UnevaluatedRuns: rep.examples, Stopped: rep.stopped}
	if w != nil {
		page.versionNotes = w.notes
		page.Notes = slices.Clone(w.notes)
	}
	if rep.unevaluated > 0 {
		page.Notes = append(page.Notes, unevaluatedNote(rep.unevaluated, rep.examples))
	}
	switch rep.stopped {
	case StoppedBudget:
		page.Notes = append(page.Notes, fmt.Sprintf("this page stopped after evaluating where on %d %s: it spent its CEL budget of %d (%d spent); the next page goes on from there",
			rep.evaluated, plural(rep.evaluated, "run"), a.cfg.WhereBudget, rep.cost))
	case StoppedDeadline:
		page.Notes = append(page.Notes, fmt.Sprintf("this page stopped after evaluating where on %d %s: it took its time limit of %v; the next page goes on from there",
			rep.evaluated, plural(rep.evaluated, "run"), a.cfg.WhereTimeout))
	}
	switch {
	case len(runs) > limit:
		runs = runs[:limit]
		page.Next = FormatCursor(store.CursorOf(runs[limit-1]))
	case reached != nil:
		page.Next = FormatCursor(*reached)
	}
	names := map[string][]string{} // by version, for failed steps
	for _, r := range runs {
		if r.Status == runtime.RunFailed && r.Failure != nil {
			if _, ok := names[r.Version]; !ok {
				names[r.Version] = a.stepNames(ctx, r.Version)
			}
		}
		page.Runs = append(page.Runs, listed(r, names[r.Version]))
	}
	return page, nil
}

// listed is a stored run as listings show it (see Run): names are the
// step names of its workflow version, to name a failed step.
func listed(r store.Run, names []string) Run {
	r.Input, r.TraceContext = nil, ""
	r.CreatedAt = r.CreatedAt.UTC()
	if !r.FinishedAt.IsZero() {
		r.FinishedAt = r.FinishedAt.UTC()
	}
	if !r.StartAt.IsZero() {
		r.StartAt = r.StartAt.UTC()
	}
	if !r.Deadline.IsZero() {
		r.Deadline = r.Deadline.UTC()
	}
	if r.Status != runtime.RunFailed {
		r.Failure = nil
	} else if r.Failure != nil && r.Failure.StepIndex >= 0 {
		r.Failure.Step = stepName(names, r.Failure.StepIndex)
	}
	return r
}

// A cursor is the creation time (Unix nanoseconds) and id of the last run
// of a page, behind a version byte, in URL-safe base64: opaque to users,
// and exact whatever precision the store keeps times in.
const cursorVersion = 1

// FormatCursor encodes a listing position as RunPage.Next does.
func FormatCursor(c store.RunCursor) string {
	b := make([]byte, 1, 25)
	b[0] = cursorVersion
	b = binary.BigEndian.AppendUint64(b, uint64(c.CreatedAt.UnixNano()))
	b = append(b, c.ID[:]...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor decodes a cursor FormatCursor made; nil for the empty
// string (the start of a listing).
func ParseCursor(s string) (*store.RunCursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 25 || b[0] != cursorVersion {
		return nil, fmt.Errorf("invalid cursor %q: pass the next-page cursor a listing printed, unchanged", s)
	}
	id, _ := uuid.FromBytes(b[9:])
	return &store.RunCursor{CreatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(b[1:9]))).UTC(), ID: id}, nil
}

// RunDetail is everything about one run: its facts, input, and steps.
type RunDetail struct {
	// Run is the run as listings show it, with its parent's step named;
	// its own Input is nil (Input below is the one to read).
	Run
	// Input is the run's input, its sensitive fields redacted.
	Input json.RawMessage `json:"input"`
	// Steps are in step order, the failure handler (if any) last.
	Steps []Step `json:"steps"`
	// Unserved is set while tasks of the run are queued that no live
	// worker can claim: no worker alive serves the run's version (see
	// runtime.UnservedWork, which says why and whether it is stranded).
	Unserved *runtime.UnservedWork `json:"unserved,omitempty"`
}

// Step is one step of a run.
type Step struct {
	Index  int                `json:"index"`
	Name   string             `json:"name"`
	Kind   string             `json:"kind"` // code, sleep, wait, map, child or onFailure
	Status runtime.TaskStatus `json:"status"`
	// Attempts counts the claims of the step's task, across run retries.
	Attempts int `json:"attempts"`
	// StartedAt is when its latest attempt started (for a sleep step: went
	// to sleep); FinishedAt when it ended.
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	// Error is the error of its latest failed attempt.
	Error string `json:"error,omitempty"`
	// Worker is the worker running it, while it is RUNNING.
	Worker string `json:"worker,omitempty"`
	// WakeAt is when a SLEEPING step wakes, a RETRYING one is tried
	// again, or a WAITING one with a timeout (a wait for an event, a child
	// workflow) times out.
	WakeAt *time.Time `json:"wakeAt,omitempty"`
	// Event is the event a wait step waits for.
	Event string `json:"event,omitempty"`
	// Output is its output, once COMPLETED (absent for steps without one).
	Output json.RawMessage `json:"output,omitempty"`
	// Children counts the runs the step started, by status: the items of
	// a map step, the runs of a child workflow step (one per attempt).
	// trellis runs list -parent lists them.
	Children map[runtime.RunStatus]int `json:"children,omitempty"`
}

// Duration is how long the step's latest attempt took, from its start to
// the step's end; false until both are known.
func (s *Step) Duration() (time.Duration, bool) {
	if s.StartedAt == nil || s.FinishedAt == nil {
		return 0, false
	}
	return s.FinishedAt.Sub(*s.StartedAt), true
}

// GetRun returns a run with its input and steps. An unknown id is an error
// matching runtime.ErrRunNotFound.
func (a *Admin) GetRun(ctx context.Context, id runtime.RunID) (*RunDetail, error) {
	r, err := a.store.GetRun(ctx, id)
	if err != nil {
		return nil, notFound(err, id)
	}
	tasks, err := a.store.ListTasks(ctx, id)
	if err != nil {
		return nil, notFound(err, id)
	}
	events, err := a.store.ListEvents(ctx, id)
	if err != nil {
		return nil, notFound(err, id)
	}
	def, _ := a.engine.Definition(ctx, r.Version) // nil when the version cannot be loaded
	var names []string
	if def != nil {
		names = def.StepNames()
	}
	started := map[int]time.Time{}
	for _, ev := range events {
		switch ev.Type {
		case runtime.EventStarted, runtime.EventSleeping:
			started[ev.StepIndex] = ev.At
		case runtime.EventWaiting:
			if _, ok := started[ev.StepIndex]; !ok {
				started[ev.StepIndex] = ev.At
			}
		}
	}
	d := &RunDetail{Run: listed(r, names), Input: redactInput(def, r.Input), Steps: make([]Step, len(tasks))}
	steps := newStepReader(def)
	for i, t := range tasks {
		s := steps.step(t)
		s.StartedAt = timeOrNil(started[t.Key.Step])
		if t.Status == runtime.TaskCompleted && len(t.Output) > 0 {
			s.Output = redactOutput(def, t.Key.Step, t.Output)
		}
		d.Steps[i] = s
	}
	if err := a.family(ctx, r, d); err != nil {
		return nil, err
	}
	if r.Status == runtime.RunRunning && slices.ContainsFunc(tasks, func(t store.Task) bool { return t.Status == runtime.TaskQueued }) {
		unserved, err := a.engine.Unserved(ctx)
		if err != nil {
			return nil, err
		}
		for i := range unserved {
			if unserved[i].Version == r.Version {
				d.Unserved = &unserved[i]
			}
		}
	}
	return d, nil
}

// family fills in a run's parent's step name and its steps' child runs.
func (a *Admin) family(ctx context.Context, r store.Run, d *RunDetail) error {
	if d.Parent != nil {
		if p, err := a.store.GetRun(ctx, d.Parent.ID); err == nil {
			d.Parent.Step = stepName(a.stepNames(ctx, p.Version), d.Parent.StepIndex)
		} else if !errors.Is(err, store.ErrNotFound) { // a purged parent leaves its id
			return err
		}
	}
	counts, err := a.store.ChildRunCounts(ctx, r.ID)
	if err != nil {
		return err
	}
	for _, c := range counts {
		for i := range d.Steps {
			if d.Steps[i].Index != c.Step {
				continue
			}
			if d.Steps[i].Children == nil {
				d.Steps[i].Children = map[runtime.RunStatus]int{}
			}
			d.Steps[i].Children[c.Status] += c.Runs
		}
	}
	return nil
}

// notFound turns the store's ErrNotFound into runtime.ErrRunNotFound,
// naming the run.
func notFound(err error, id runtime.RunID) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("run %s: %w", id, runtime.ErrRunNotFound)
	}
	return err
}

// RunGraph draws a run's DAG, as its stored workflow version defines it,
// each step coloured by its status (see graph.Options): Mermaid to paste
// into Markdown, DOT for Graphviz. An unknown id is an error matching
// runtime.ErrRunNotFound.
func (a *Admin) RunGraph(ctx context.Context, id runtime.RunID, format graph.Format) ([]byte, error) {
	r, err := a.store.GetRun(ctx, id)
	if err != nil {
		return nil, notFound(err, id)
	}
	def, err := a.engine.Definition(ctx, r.Version)
	if err != nil {
		return nil, err
	}
	tasks, err := a.store.ListTasks(ctx, id)
	if err != nil {
		return nil, notFound(err, id)
	}
	names := def.StepNames()
	status := make(map[string]string, len(tasks))
	for _, t := range tasks {
		status[stepName(names, t.Key.Step)] = string(t.Status)
	}
	spec := def.Spec()
	return graph.Render(&spec, format, graph.Options{Status: status})
}
