package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/schema/spec"
	"github.com/effectivelabs/trellis/schema/spec/graph"
)

// RunsCommand is trellis runs: it lists runs, shows one with its steps or
// its event log, cancels, retries or reruns runs, and purges finished ones.
type RunsCommand struct {
	// Clock is the time relative times are measured from; nil is the
	// system clock.
	Clock clock.Clock
	// Confirm asks the user a yes-or-no question (bulk cancel, retry and
	// rerun, and purge, ask before they act); nil asks on the terminal when
	// standard input is one.
	Confirm func(question string) (bool, error)
}

// Name implements Command.
func (RunsCommand) Name() string { return "runs" }

// Summary implements Command.
func (RunsCommand) Summary() string {
	return "list, show, cancel, retry, rerun and purge runs (list|show|events|cancel|retry|rerun|purge)"
}

// runsSubcommand is one of trellis runs' subcommands.
type runsSubcommand struct{ name, synopsis, summary string }

// runsSubcommands returns trellis runs' subcommands, in the order usage
// lists them.
func runsSubcommands() []runsSubcommand {
	return []runsSubcommand{
		{"list", "[flags]", "list runs, newest first, a page at a time"},
		{"show", "[flags] RUN", "show a run: its failure, steps, input and outputs, or its DAG (-graph)"},
		{"events", "[flags] RUN", "print a run's event log"},
		{"cancel", "[flags] RUN... | [flags] FILTERS", "cancel running runs, by id or by filter"},
		{"retry", "[flags] RUN... | [flags] FILTERS", "retry failed or cancelled runs from the steps that did not complete, by id or by filter"},
		{"rerun", "-from STEP [flags] RUN... | -from STEP [flags] FILTERS", "run finished runs again from a step, by id or by filter"},
		{"purge", "[flags]", "delete finished runs older than their retention, or than -older-than"},
	}
}

// Run implements Command.
func (c RunsCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var names []string
	for _, s := range runsSubcommands() {
		names = append(names, s.name)
	}
	sub, args := splitSubcommand(args, append(names, "help"))
	switch sub {
	case "":
		if wantsHelp(args) {
			c.usage(stdout)
			return ExitOK
		}
		c.usage(stderr)
		return ExitUsage
	case "help":
		c.usage(stdout)
		return ExitOK
	case "list":
		return c.list(ctx, args, stdout, stderr)
	case "show":
		return c.show(ctx, args, stdout, stderr)
	case "events":
		return c.events(ctx, args, stdout, stderr)
	case "cancel", "retry", "rerun":
		return c.act(ctx, sub, args, stdout, stderr)
	case "purge":
		return c.purge(ctx, args, stdout, stderr)
	}
	unknownSubcommand(stderr, c.Name(), sub, names)
	c.usage(stderr)
	return ExitUsage
}

func (RunsCommand) usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("Usage: trellis runs <subcommand> [flags] [arguments]\n\nSubcommands:\n\n")
	for _, s := range runsSubcommands() {
		fmt.Fprintf(&b, "\t%-7s %s\n", s.name, s.summary)
	}
	b.WriteString("\nRUN is a run's id, or a start of it that begins no other run's id (at least 8 hex digits).\n")
	b.WriteString("Each takes -database-url (default $TRELLIS_DATABASE_URL) and -format text|json.\nRun trellis runs <subcommand> -h for its flags.\n")
	fmt.Fprint(w, b.String())
}

// flagSet returns the flag set of a subcommand, with the flags every one
// takes.
func (c RunsCommand) flagSet(sub string, o *OpsOptions, detail string) *flag.FlagSet {
	subs := runsSubcommands()
	s := subs[slices.IndexFunc(subs, func(s runsSubcommand) bool { return s.name == sub })]
	fs := newFlagSet("runs "+sub, s.synopsis, strings.ToUpper(s.summary[:1])+s.summary[1:]+"."+detail)
	o.Clock = c.Clock
	addOpsFlags(fs, o)
	return fs
}

// RunsFilterOptions select runs: the filters of trellis runs list, and of
// cancel, retry and rerun when they act on every run a filter selects.
type RunsFilterOptions struct {
	Workflow string
	// Status is a comma-separated list of run statuses, in any case.
	Status string
	Tenant string
	// Since and Until bound when the runs were created: an RFC 3339 time,
	// a date (2006-01-02, UTC), or a duration meaning that long ago.
	Since, Until string
	// FinishedSince keeps runs that finished at or after it (read as
	// Since), whenever they were created.
	FinishedSince  string
	IdempotencyKey string
	// Parent keeps the runs the steps of that run (an id) started: map
	// items and child workflows.
	Parent string
	// Tags are -tag flags, each key=value: the runs carry every one.
	Tags TagFlags
	// Where is a CEL expression over input, status, tenant, created and
	// tags, type-checked against the input schema of Workflow.
	Where string
}

// TagFlags are the values of a repeatable -tag key=value flag.
type TagFlags []string

func (t *TagFlags) String() string {
	if t == nil {
		return ""
	}
	return strings.Join(*t, " ")
}

// Set implements flag.Value: one more tag.
func (t *TagFlags) Set(v string) error {
	*t = append(*t, v)
	return nil
}

// tags reads the flags as tags, reporting each that is not key=value and
// each key given two values.
func (t TagFlags) tags() (map[string]string, []error) {
	if len(t) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(t))
	var errs []error
	for _, kv := range t {
		k, v, ok := strings.Cut(kv, "=")
		switch old, dup := out[k]; {
		case !ok:
			errs = append(errs, fmt.Errorf("-tag %q: give key=value, e.g. -tag customer=acme", kv))
		case dup && old != v:
			errs = append(errs, fmt.Errorf("-tag %q: tag %s is given twice, with values %q and %q; a run has one value per key", kv, k, old, v))
		default:
			out[k] = v
		}
	}
	return out, errs
}

// addFilterFlags registers the run filters on fs.
func addFilterFlags(fs *flag.FlagSet, o *RunsFilterOptions) {
	fs.StringVar(&o.Workflow, "workflow", "", "only runs of this workflow `name`")
	fs.StringVar(&o.Status, "status", "", "only runs in these `statuses` (comma-separated: RUNNING, COMPLETED, FAILED, CANCELLED)")
	fs.StringVar(&o.Tenant, "tenant", "", "only runs of this `tenant`")
	fs.StringVar(&o.Since, "since", "", "only runs created at or after this `time` (RFC 3339, a date, or a duration ago such as 24h)")
	fs.StringVar(&o.Until, "until", "", "only runs created before this `time` (as -since)")
	fs.StringVar(&o.FinishedSince, "finished-since", "", "only runs that finished (completed, failed or were cancelled) at or after this `time` (as -since),\n"+
		"whenever they were created, e.g. -status FAILED -finished-since 1h")
	fs.StringVar(&o.IdempotencyKey, "idempotency-key", "", "only the runs triggered with this idempotency `key`")
	fs.StringVar(&o.Parent, "parent", "", "only the runs the steps of this `run` started (map items, child workflows)")
	fs.Var(&o.Tags, "tag", "only the runs tagged `key=value` (repeatable: runs with every tag given)")
	fs.StringVar(&o.Where, "where", "", "only the runs this CEL `expression` over input, status, tenant, created and tags selects\n"+
		"(needs -workflow; type-checked against its input schema), e.g. 'input.amount > 100 && status == \"FAILED\"'\n"+
		"or 'tags.customer == \"acme\"'")
}

// findParent sets f.Parent to the run -parent names when it gave the
// start of an id, or returns the exit code to stop with (see findRuns).
func (o RunsFilterOptions) findParent(ctx context.Context, a *ops.Admin, name string, f *ops.RunFilter, stderr io.Writer) (int, error) {
	if o.Parent == "" || f.Parent != uuid.Nil {
		return -1, nil
	}
	id, code, err := findRun(ctx, a, name, stderr, o.Parent)
	f.Parent = id
	return code, err
}

// given reports whether any filter is set.
func (o RunsFilterOptions) given() bool {
	tags := len(o.Tags) > 0
	o.Tags = nil
	return tags || !reflect.ValueOf(o).IsZero()
}

// filter turns the options into a run filter, relative to now, reporting
// every option that is wrong.
func (o RunsFilterOptions) filter(now time.Time) (ops.RunFilter, []error) {
	f := ops.RunFilter{Workflow: o.Workflow, Tenant: o.Tenant, IdempotencyKey: o.IdempotencyKey, Where: o.Where}
	tags, errs := o.Tags.tags()
	f.Tags = tags
	for _, s := range strings.Split(o.Status, ",") {
		if s = strings.TrimSpace(s); s != "" {
			f.Statuses = append(f.Statuses, runtime.RunStatus(strings.ToUpper(s)))
		}
	}
	var err error
	if f.CreatedFrom, err = parseTimeFlag("since", o.Since, now); err != nil {
		errs = append(errs, err)
	}
	if f.CreatedTo, err = parseTimeFlag("until", o.Until, now); err != nil {
		errs = append(errs, err)
	}
	if f.FinishedFrom, err = parseTimeFlag("finished-since", o.FinishedSince, now); err != nil {
		errs = append(errs, err)
	}
	if o.Parent != "" {
		if err := ops.CheckRunRef(o.Parent); err != nil {
			errs = append(errs, fmt.Errorf("-parent %w", err))
		} else if id, err := uuid.Parse(o.Parent); err == nil {
			f.Parent = id
		} // else a prefix: findParent reads the run it names
	}
	if o.Where != "" && o.Workflow == "" {
		errs = append(errs, errors.New("-where needs -workflow: the expression is type-checked against that workflow's input schema"))
	}
	return f, errs
}

// RunsListOptions are the options of trellis runs list.
type RunsListOptions struct {
	OpsOptions
	RunsFilterOptions
	Limit int
	// After is the cursor a previous page printed.
	After string
}

// Filter turns the options into the listing's filter, relative to now,
// reporting every option that is wrong.
func (o RunsListOptions) Filter(now time.Time) (ops.RunFilter, error) {
	f, errs := o.filter(now)
	f.Limit, f.After = o.Limit, o.After
	if o.Limit <= 0 {
		errs = append(errs, fmt.Errorf("-limit %d: use 1 to %d", o.Limit, ops.MaxLimit))
	} else if len(errs) == 0 {
		if err := f.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return f, errors.Join(errs...)
}

// parseTimeFlag reads -since or -until: an RFC 3339 time, a date, or a
// duration before now.
func parseTimeFlag(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("-%s %q: give an RFC 3339 time (2030-01-02T15:04:05Z), a date (2030-01-02) or a duration ago (24h)", name, v)
}

func (c RunsCommand) list(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o RunsListOptions
	fs := c.flagSet("list", &o.OpsOptions, "\nFilters combine; -after continues a listing from the cursor the previous page printed.")
	addFilterFlags(fs, &o.RunsFilterOptions)
	addWhereBoundFlags(fs, &o.OpsOptions)
	fs.IntVar(&o.Limit, "limit", ops.DefaultLimit, fmt.Sprintf("runs per page (`n`, at most %d)", ops.MaxLimit))
	fs.StringVar(&o.After, "after", "", "continue the listing after this `cursor` (printed under the previous page)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "trellis runs list: unexpected argument %q (filters are flags)\n", fs.Arg(0))
		return ExitUsage
	}
	return RunsList(ctx, o, stdout, stderr)
}

// RunsList runs trellis runs list with opts and returns its exit code.
func RunsList(ctx context.Context, o RunsListOptions, stdout, stderr io.Writer) int {
	now := o.now()
	filter, ferr := o.Filter(now)
	return opsRun(ctx, "runs list", o.OpsOptions, ferr, 0, stderr, func(a *ops.Admin) (int, error) {
		if code, err := o.findParent(ctx, a, "runs list", &filter, stderr); code >= 0 || err != nil {
			return code, err
		}
		page, err := a.ListRuns(ctx, filter)
		var where *ops.WhereError
		if errors.As(err, &where) {
			fmt.Fprintf(stderr, "trellis runs list: -%v\n", err)
			return ExitUsage, nil
		}
		if err != nil {
			return 0, err
		}
		for _, n := range page.Notes {
			fmt.Fprintf(stderr, "trellis runs list: note: %s\n", oneLine(n))
		}
		if o.Format == "json" {
			return -1, printJSON(stdout, page)
		}
		if len(page.Runs) == 0 {
			_, err := fmt.Fprintln(stdout, "no runs")
			return -1, err
		}
		// Tags get a column when a run of the page has some.
		tagged := slices.ContainsFunc(page.Runs, func(r ops.Run) bool { return len(r.Tags) > 0 })
		head := []string{"ID", "WORKFLOW", "TENANT", "STATUS", "CREATED", "DURATION", "FAILURE"}
		if tagged {
			head = slices.Insert(head, 6, "TAGS")
		}
		t := newTable(stdout, head...)
		for _, r := range page.Runs {
			took := "-"
			if d, ok := r.Duration(); ok {
				took = shortDuration(d)
			} else if r.Scheduled(now) {
				took = "starts in " + shortDuration(r.StartAt.Sub(now))
			}
			failure := ""
			if r.Failure != nil {
				failure = r.Failure.Error
				if r.Failure.Step != "" {
					failure = r.Failure.Step + ": " + failure
				}
				failure = truncate(failure, 40)
			}
			status := string(r.Status)
			if r.Waiting || !r.DebouncedUntil.IsZero() {
				status = string(runtime.TaskQueued) // waits for a slot of its runConcurrency key, or its debounce window
			}
			cells := []string{r.ID.String(), truncate(r.Workflow, 24), truncate(r.Tenant, 20), status, ago(now, r.CreatedAt), took, failure}
			if tagged {
				cells = slices.Insert(cells, 6, truncate(tagsText(r.Tags), 32))
			}
			t.row(cells...)
			t.paint(3, statusStyle(status))
		}
		if err := t.flush(); err != nil {
			return 0, err
		}
		if page.Next != "" {
			_, err = fmt.Fprintf(stdout, "\nnext page: -after %s\n", page.Next)
		}
		return -1, err
	})
}

// RunsShowOptions are the options of trellis runs show and events.
type RunsShowOptions struct {
	OpsOptions
	// Run is the run's id, or a unique start of it (at least
	// ops.MinRunIDPrefix hex digits).
	Run string
	// Graph, when set (mermaid or dot), makes show draw the run's DAG,
	// each step coloured by its status, instead of its table.
	Graph string
}

// Validate reports options show cannot run with.
func (o RunsShowOptions) Validate() error {
	err := checkRunRefs(o.Run)
	if o.Graph != "" {
		_, gerr := graph.ParseFormat(o.Graph)
		if gerr == nil && o.Format == "json" {
			gerr = errors.New("-graph draws the run: it does not go with -format json")
		}
		err = errors.Join(err, gerr)
	}
	return err
}

// oneRun parses the flags and the single run id of show and events.
func (c RunsCommand) oneRun(sub string, args []string, stderr io.Writer) (RunsShowOptions, int) {
	var o RunsShowOptions
	fs := c.flagSet(sub, &o.OpsOptions, "")
	if sub == "show" {
		fs.StringVar(&o.Graph, "graph", "", "draw the run's DAG, each step coloured by its status, in this `format`\n(mermaid, to paste into Markdown, or dot, for Graphviz) instead of the table")
	}
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return o, code
	}
	pos := fs.Args()
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "trellis runs %s: give one run id (or a unique start of it)\n", sub)
		fs.Usage()
		return o, ExitUsage
	}
	o.Run = pos[0]
	return o, -1
}

func (c RunsCommand) show(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := c.oneRun("show", args, stderr)
	if code >= 0 {
		return code
	}
	return RunsShow(ctx, o, stdout, stderr)
}

// RunsShow runs trellis runs show with opts and returns its exit code.
func RunsShow(ctx context.Context, o RunsShowOptions, stdout, stderr io.Writer) int {
	return opsRun(ctx, "runs show", o.OpsOptions, o.Validate(), 0, stderr, func(a *ops.Admin) (int, error) {
		id, code, err := findRun(ctx, a, "runs show", stderr, o.Run)
		if code >= 0 || err != nil {
			return code, err
		}
		if o.Graph != "" {
			format, _ := graph.ParseFormat(o.Graph)
			drawing, err := a.RunGraph(ctx, id, format)
			if err != nil {
				return 0, err
			}
			_, err = stdout.Write(drawing)
			return -1, err
		}
		r, err := a.GetRun(ctx, id)
		if err != nil {
			return 0, err
		}
		if o.Format == "json" {
			return -1, printJSON(stdout, r)
		}
		return -1, writeRun(stdout, r, o.now())
	})
}

// priorityName says a run priority with its meaning: "3 (high)".
func priorityName(p int) string {
	if !runtime.ValidPriority(p) {
		return strconv.Itoa(p)
	}
	return fmt.Sprintf("%d (%s)", p, spec.PriorityName(p))
}

// childrenNote sums up the runs a step started: "3 child runs: 2
// COMPLETED, 1 RUNNING".
func childrenNote(counts map[runtime.RunStatus]int) string {
	total := 0
	var parts []string
	for _, st := range ops.RunStatuses() {
		if n := counts[st]; n > 0 {
			total += n
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	noun := "child runs"
	if total == 1 {
		noun = "child run"
	}
	return fmt.Sprintf("%d %s: %s", total, noun, strings.Join(parts, ", "))
}

// failureText says what failed a run: "step work: boom", or, for a run
// whose deadline passed, "run deadline of 1h passed".
func failureText(f *runtime.Failure) string {
	if f.StepIndex < 0 && f.Step == "" {
		return f.Error
	}
	return "step " + f.Step + ": " + f.Error
}

// writeRun prints a run: a header, the failure, the steps as a table, then
// the input and outputs as indented JSON. now tells a delayed run that
// has not started from one that has.
func writeRun(w io.Writer, r *ops.RunDetail, now time.Time) error {
	h := newTable(w)
	h.row("Run:", r.ID.String())
	h.row("Workflow:", r.Workflow+" ("+r.Version+")")
	h.row("Tenant:", r.Tenant)
	if p := r.Parent; p != nil {
		step := p.Step
		if step == "" {
			step = "?" // the parent run was purged
		}
		h.row("Started by:", fmt.Sprintf("run %s, step %s (index %d)", p.ID, step, p.Index))
	}
	if r.IdempotencyKey != "" {
		h.row("Idempotency key:", r.IdempotencyKey)
	}
	if len(r.Tags) > 0 {
		h.row("Tags:", tagsText(r.Tags))
	}
	h.row("Priority:", priorityName(r.Priority))
	h.row("Status:", string(r.Status))
	h.paint(1, statusStyle(string(r.Status)))
	if r.Waiting {
		h.row("Waiting:", "for a slot of its runConcurrency key: no step starts until a run of the key ends")
	}
	if u := r.Unserved; u != nil {
		state := "Unserved:"
		if u.Stranded {
			state = "Stranded:"
		}
		h.row(state, truncate(u.Reason, 200))
		h.paint(1, warning)
	}
	if !r.DebouncedUntil.IsZero() {
		h.row("Debounced:", "starts "+timestamp(&r.DebouncedUntil)+" unless a newer trigger of its debounce key cancels it")
	}
	h.row("Created:", timestamp(&r.CreatedAt))
	if !r.RerunAt.IsZero() {
		h.row("Rerun:", timestamp(&r.RerunAt)+" (from a step: runs events shows which steps ran again)")
	}
	if !r.StartAt.IsZero() {
		label := "Started:"
		if r.Scheduled(now) {
			label = "Starts:"
		}
		h.row(label, timestamp(&r.StartAt)+" (delayed)")
	}
	if !r.Deadline.IsZero() {
		h.row("Deadline:", timestamp(&r.Deadline))
	}
	if d, ok := r.Duration(); ok {
		h.row("Finished:", timestamp(&r.FinishedAt)+" (after "+shortDuration(d)+")")
	}
	if r.Failure != nil {
		h.row("Failure:", failureText(r.Failure))
	}
	if err := h.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t := newTable(w, "STEP", "KIND", "STATUS", "ATTEMPTS", "STARTED", "DURATION", "ERROR")
	for _, s := range r.Steps {
		took := "-"
		if d, ok := s.Duration(); ok {
			took = shortDuration(d)
		}
		note := truncate(s.Error, 60)
		switch {
		case s.WakeAt != nil && s.Status == runtime.TaskSleeping:
			note = "wakes " + timestamp(s.WakeAt)
		case s.Status == runtime.TaskWaiting && s.Event != "":
			note = truncate("waits for event "+s.Event, 40)
			if s.WakeAt != nil {
				note += ", times out " + timestamp(s.WakeAt)
			}
		case s.WakeAt != nil && s.Status == runtime.TaskWaiting:
			note = "times out " + timestamp(s.WakeAt)
		case s.WakeAt != nil:
			note = truncate("next attempt "+timestamp(s.WakeAt)+": "+s.Error, 60)
		case s.Worker != "":
			note = "on worker " + s.Worker
		case len(s.Children) > 0 && note == "":
			note = childrenNote(s.Children)
		}
		t.row(s.Name, s.Kind, string(s.Status), fmt.Sprint(s.Attempts), timestamp(s.StartedAt), took, note)
		t.paint(2, statusStyle(string(s.Status)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if slices.ContainsFunc(r.Steps, func(s ops.Step) bool { return len(s.Children) > 0 }) {
		fmt.Fprintf(w, "\nChild runs: trellis runs list -parent %s\n", r.ID)
	}
	fmt.Fprintln(w)
	if err := writeHeading(w, "Input:"); err != nil {
		return err
	}
	indentJSON(w, "  ", r.Input)
	for _, s := range r.Steps {
		if len(s.Output) > 0 {
			fmt.Fprintln(w)
			if err := writeHeading(w, "Output of "+oneLine(s.Name)+":"); err != nil {
				return err
			}
			indentJSON(w, "  ", s.Output)
		}
	}
	return nil
}

func (c RunsCommand) events(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := c.oneRun("events", args, stderr)
	if code >= 0 {
		return code
	}
	return RunsEvents(ctx, o, stdout, stderr)
}

// RunsEvents runs trellis runs events with opts and returns its exit code.
func RunsEvents(ctx context.Context, o RunsShowOptions, stdout, stderr io.Writer) int {
	return opsRun(ctx, "runs events", o.OpsOptions, o.Validate(), 0, stderr, func(a *ops.Admin) (int, error) {
		id, code, err := findRun(ctx, a, "runs events", stderr, o.Run)
		if code >= 0 || err != nil {
			return code, err
		}
		events, err := a.Engine().Events(ctx, id)
		if err != nil {
			return 0, err
		}
		if o.Format == "json" {
			return -1, printJSON(stdout, events)
		}
		t := newTable(stdout, "TIME", "STEP", "EVENT", "ATTEMPT", "DETAIL")
		for _, e := range events {
			t.row(eventTime(e.At), e.Step, string(e.Type), fmt.Sprint(e.Attempt), truncate(e.Detail, 80))
		}
		return -1, t.flush()
	})
}

// RunsActOptions are the options of trellis runs cancel, retry and rerun:
// the runs' ids, or filters that select them (all of them, however many).
type RunsActOptions struct {
	OpsOptions
	RunsFilterOptions
	// From is the step rerun runs the runs again from (rerun only).
	From string
	// Runs are the runs' ids, or unique starts of them (at least
	// ops.MinRunIDPrefix hex digits).
	Runs []string
	// DryRun counts and shows the runs the filters select, changing
	// nothing.
	DryRun bool
	// Yes acts on the runs the filters select without asking first.
	Yes bool
	// Confirm asks whether to go on, when neither DryRun nor Yes is set;
	// nil when nobody can answer (stdin is not a terminal).
	Confirm func(question string) (bool, error)
}

// bulkStatuses are the statuses a bulk cancel, retry or rerun can act on.
var bulkStatuses = map[string][]runtime.RunStatus{
	"cancel": {runtime.RunRunning},
	"retry":  {runtime.RunFailed, runtime.RunCancelled},
	"rerun":  {runtime.RunCompleted, runtime.RunFailed, runtime.RunCancelled},
}

// Validate reports options cancel, retry and rerun cannot run with (rerun
// checks its -from with validateRerun).
func (o RunsActOptions) Validate() error {
	if len(o.Runs) > 0 && o.given() {
		return errors.New("give the ids of the runs or filters that select them, not both")
	}
	if len(o.Runs) == 0 && !o.given() {
		return errors.New("give the ids of the runs, or filters that select them (-workflow, -status, -tenant, -since, -until, -finished-since, -idempotency-key, -parent, -where)")
	}
	if len(o.Runs) > 0 && (o.DryRun || o.Yes) {
		return errors.New("-dry-run and -yes go with filters: runs given by id are acted on as given")
	}
	return checkRunRefs(o.Runs...)
}

// bulkFilter is the filter of a bulk action: the options' filters, with
// the statuses the action applies to (all of them when none is given).
func (o RunsActOptions) bulkFilter(action string, now time.Time) (ops.RunFilter, error) {
	f, errs := o.filter(now)
	allowed := bulkStatuses[action]
	for _, st := range f.Statuses {
		if !slices.Contains(allowed, st) {
			errs = append(errs, fmt.Errorf("-status %s: %s acts on runs that are %s", st, action, joinStatuses(allowed)))
		}
	}
	if len(f.Statuses) == 0 {
		f.Statuses = allowed
	}
	if len(errs) == 0 {
		if err := f.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return f, errors.Join(errs...)
}

func joinStatuses(sts []runtime.RunStatus) string {
	names := make([]string, len(sts))
	for i, st := range sts {
		names[i] = string(st)
	}
	return strings.Join(names, " or ")
}

func (c RunsCommand) act(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) int {
	var o RunsActOptions
	fs := c.flagSet(sub, &o.OpsOptions, map[string]string{
		"rerun": "\n\nThe step and every step below it run again, as new attempts of the same run,\n" +
			"with the kept outputs of the steps above it; in a failed or cancelled run, the\n" +
			"steps that did not complete run again too. A running run is left as it is.",
	}[sub]+"\n\nGive run ids, or filters: then every run they select is "+map[string]string{
		"cancel": "cancelled (the running ones)", "retry": "retried (the failed and cancelled ones)",
		"rerun": "rerun (the finished ones)",
	}[sub]+",\nafter a count and a confirmation (-yes skips it; -dry-run only counts).\n"+
		"The outcome is printed; the exit status is 1 if a run was not found or the\ndatabase failed, 3 if nothing changed for want of a confirmation, 0 otherwise\n(a run left as it was counts as done).")
	if sub == "rerun" {
		fs.StringVar(&o.From, "from", "", "the `step` to run again, with every step below it (required)")
	}
	addFilterFlags(fs, &o.RunsFilterOptions)
	addWhereBoundFlags(fs, &o.OpsOptions)
	fs.BoolVar(&o.DryRun, "dry-run", false, "count and show the runs the filters select; change nothing")
	fs.BoolVar(&o.Yes, "yes", false, "act on the runs the filters select without asking")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	pos := fs.Args()
	o.Runs = pos
	o.Confirm = c.confirm(stderr)
	switch sub {
	case "cancel":
		return RunsCancel(ctx, o, stdout, stderr)
	case "rerun":
		return RunsRerun(ctx, o, stdout, stderr)
	}
	return RunsRetry(ctx, o, stdout, stderr)
}

// confirm returns how to ask the user a question: Confirm, or on the
// terminal; nil when there is no one to ask.
func (c RunsCommand) confirm(stderr io.Writer) func(string) (bool, error) {
	if c.Confirm != nil {
		return c.Confirm
	}
	if isTerminal(os.Stdin) {
		return askOn(os.Stdin, stderr)
	}
	return nil
}

// RunsCancel runs trellis runs cancel with opts and returns its exit code.
func RunsCancel(ctx context.Context, o RunsActOptions, stdout, stderr io.Writer) int {
	return runsAct(ctx, "cancel", o, stdout, stderr, (*ops.Admin).Cancel)
}

// RunsRetry runs trellis runs retry with opts and returns its exit code.
func RunsRetry(ctx context.Context, o RunsActOptions, stdout, stderr io.Writer) int {
	return runsAct(ctx, "retry", o, stdout, stderr, (*ops.Admin).Retry)
}

// RunsRerun runs trellis runs rerun with opts and returns its exit code.
func RunsRerun(ctx context.Context, o RunsActOptions, stdout, stderr io.Writer) int {
	return runsAct(ctx, "rerun", o, stdout, stderr, func(a *ops.Admin, ctx context.Context, ids ...uuid.UUID) []ops.ActionResult {
		return a.Rerun(ctx, o.From, ids...)
	})
}

// bulkChunk is how many runs a bulk action hands the Admin at once:
// between chunks, an interrupt stops it.
const bulkChunk = 2000

func runsAct(ctx context.Context, action string, o RunsActOptions, stdout, stderr io.Writer,
	act func(*ops.Admin, context.Context, ...uuid.UUID) []ops.ActionResult,
) int {
	name := "runs " + action
	verr := o.Validate()
	if verr == nil && action == "rerun" && o.From == "" {
		verr = errors.New("give the step to run again from: -from STEP")
	}
	var filter ops.RunFilter
	if verr == nil && len(o.Runs) == 0 {
		filter, verr = o.bulkFilter(action, o.now())
	}
	return opsRun(ctx, name, o.OpsOptions, verr, 0, stderr, func(a *ops.Admin) (int, error) {
		if len(o.Runs) > 0 {
			// Every prefix names one run before any is acted on.
			ids, code, err := findRuns(ctx, a, name, stderr, o.Runs...)
			if code >= 0 || err != nil {
				return code, err
			}
			return printActed(stdout, o.Format, act(a, ctx, ids...))
		}
		if code, err := o.findParent(ctx, a, name, &filter, stderr); code >= 0 || err != nil {
			return code, err
		}
		sel, err := a.Select(ctx, filter)
		var where *ops.WhereError
		if errors.As(err, &where) {
			fmt.Fprintf(stderr, "trellis %s: -%v\n", name, err)
			return ExitUsage, nil
		}
		if err != nil {
			return 0, err
		}
		for _, n := range sel.Notes { // runs left unselected, never acted on
			fmt.Fprintf(stderr, "trellis %s: note: %s\n", name, n)
		}
		ids := sel.Runs
		if o.DryRun || len(ids) == 0 {
			return -1, printSelected(ctx, a, stdout, o.Format, action, sel)
		}
		if !o.Yes {
			if o.Confirm == nil {
				fmt.Fprintf(stderr, "trellis %s: %s selects %s; nothing changed: standard input is not a terminal to confirm on, so run again with -yes to %s them (-dry-run shows them)\n",
					name, filterText(o.RunsFilterOptions), runCount(len(ids)), action)
				return ExitNotConfirmed, nil
			}
			ok, err := o.Confirm(fmt.Sprintf("%s %s? [y/N] ", action, runCount(len(ids))))
			if err != nil {
				return 0, err
			}
			if !ok {
				fmt.Fprintf(stderr, "trellis %s: not confirmed; nothing changed\n", name)
				return ExitNotConfirmed, nil
			}
		}
		var results []ops.ActionResult
		for chunk := range slices.Chunk(ids, bulkChunk) {
			if err := ctx.Err(); err != nil {
				return 0, fmt.Errorf("interrupted after %d of %s: %w", len(results), runCount(len(ids)), err)
			}
			results = append(results, act(a, ctx, chunk...)...)
		}
		return printBulk(stdout, o.Format, action, results, sel.Unevaluated)
	})
}

// printActed prints the outcome of each run of an action on runs given by
// id.
func printActed(w io.Writer, format string, results []ops.ActionResult) (int, error) {
	code := -1
	if slices.ContainsFunc(results, func(r ops.ActionResult) bool { return !r.OK() }) {
		code = ExitProblems
	}
	if format == "json" {
		return code, printJSON(w, results)
	}
	t := newTable(w)
	for _, r := range results {
		t.row(r.Run.String(), outcomeText(r))
	}
	return code, t.flush()
}

func outcomeText(r ops.ActionResult) string {
	what := string(r.Outcome)
	if r.Status != "" {
		what += " (" + string(r.Status) + ")"
	}
	if r.Error != "" {
		what += ": " + r.Error
	}
	return what
}

// selectedShown is how many of the runs a dry run lists in text.
const selectedShown = 20

// printSelected prints the runs a bulk action would act on.
// Runs a Where filter could not be evaluated on are not selected: they
// are counted (unevaluated) and named in the notes on stderr.
func printSelected(ctx context.Context, a *ops.Admin, w io.Writer, format, action string, sel *ops.Selection) error {
	ids := sel.Runs
	if format == "json" {
		if ids == nil {
			ids = []uuid.UUID{}
		}
		return printJSON(w, struct {
			Action      string      `json:"action"`
			DryRun      bool        `json:"dryRun"`
			Selected    int         `json:"selected"`
			Runs        []uuid.UUID `json:"runs"`
			Unevaluated int         `json:"unevaluated,omitempty"`
		}{action, true, len(ids), ids, sel.Unevaluated})
	}
	if len(ids) == 0 {
		_, err := fmt.Fprintf(w, "no runs to %s\n", action)
		return err
	}
	fmt.Fprintf(w, "would %s %s:\n\n", action, runCount(len(ids)))
	t := newTable(w, "ID", "WORKFLOW", "TENANT", "STATUS", "CREATED")
	for _, id := range ids[:min(len(ids), selectedShown)] {
		r, err := a.GetRun(ctx, id)
		if err != nil {
			t.row(id.String(), "-", "-", "-", "-")
			continue
		}
		t.row(id.String(), truncate(r.Workflow, 24), truncate(r.Tenant, 20), string(r.Status), timestamp(&r.CreatedAt))
		t.paint(3, statusStyle(string(r.Status)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(ids) > selectedShown {
		fmt.Fprintf(w, "... and %d more\n", len(ids)-selectedShown)
	}
	_, err := fmt.Fprintln(w, "\ndry run: nothing changed")
	return err
}

// printBulk prints what a bulk action did: a count per outcome, and each
// run that was not found or failed. unevaluated counts the runs left out
// because the Where filter could not be evaluated on them.
func printBulk(w io.Writer, format, action string, results []ops.ActionResult, unevaluated int) (int, error) {
	counts := map[ops.Outcome]int{}
	var problems []ops.ActionResult
	for _, r := range results {
		counts[r.Outcome]++
		if !r.OK() {
			problems = append(problems, r)
		}
	}
	code := -1
	if len(problems) > 0 {
		code = ExitProblems
	}
	if format == "json" {
		if problems == nil {
			problems = []ops.ActionResult{}
		}
		return code, printJSON(w, struct {
			Action      string              `json:"action"`
			Selected    int                 `json:"selected"`
			Outcomes    map[ops.Outcome]int `json:"outcomes"`
			Problems    []ops.ActionResult  `json:"problems"`
			Unevaluated int                 `json:"unevaluated,omitempty"`
		}{action, len(results), counts, problems, unevaluated})
	}
	t := newTable(w, "OUTCOME", "RUNS")
	for _, o := range []ops.Outcome{ops.Cancelled, ops.Retried, ops.Rerun, ops.AlreadyEnded, ops.NotRetryable, ops.NotRerunnable, ops.NotFound, ops.Failed} {
		if counts[o] > 0 {
			t.row(string(o), fmt.Sprint(counts[o]))
		}
	}
	if err := t.flush(); err != nil {
		return 0, err
	}
	if len(problems) > 0 {
		fmt.Fprintln(w)
		p := newTable(w)
		for _, r := range problems {
			p.row(r.Run.String(), outcomeText(r))
		}
		return code, p.flush()
	}
	return code, nil
}

func runCount(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

// filterText names the filters given, for messages.
func filterText(o RunsFilterOptions) string {
	var parts []string
	add := func(flag, v string) {
		if v != "" {
			parts = append(parts, fmt.Sprintf("-%s %q", flag, v))
		}
	}
	add("workflow", o.Workflow)
	add("status", o.Status)
	add("tenant", o.Tenant)
	add("since", o.Since)
	add("until", o.Until)
	add("finished-since", o.FinishedSince)
	add("idempotency-key", o.IdempotencyKey)
	for _, t := range o.Tags {
		add("tag", t)
	}
	add("where", o.Where)
	if len(parts) == 0 {
		return "the filter"
	}
	return strings.Join(parts, " ")
}

// tagsText prints a run's tags as key=value, by key, a value quoted
// when it is empty or holds a space or a quote.
func tagsText(tags map[string]string) string {
	parts := make([]string, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		v := tags[k]
		if v == "" || strings.ContainsAny(v, " \"") {
			v = strconv.Quote(v)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}
