package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// RunsCommand is trellis runs: it lists runs, shows one with its steps or
// its event log, cancels or retries runs, and purges finished ones.
type RunsCommand struct {
	// Clock is the time relative times are measured from; nil is the
	// system clock.
	Clock clock.Clock
	// Confirm asks the user a yes-or-no question (purge asks before it
	// deletes); nil asks on the terminal when standard input is one.
	Confirm func(question string) (bool, error)
}

// Name implements Command.
func (RunsCommand) Name() string { return "runs" }

// Summary implements Command.
func (RunsCommand) Summary() string {
	return "list, show, cancel, retry and purge runs (list|show|events|cancel|retry|purge)"
}

// runsSubcommand is one of trellis runs' subcommands.
type runsSubcommand struct{ name, synopsis, summary string }

// runsSubcommands returns trellis runs' subcommands, in the order usage
// lists them.
func runsSubcommands() []runsSubcommand {
	return []runsSubcommand{
		{"list", "[flags]", "list runs, newest first, a page at a time"},
		{"show", "[flags] RUN", "show a run: its failure, steps, input and outputs"},
		{"events", "[flags] RUN", "print a run's event log"},
		{"cancel", "[flags] RUN...", "cancel running runs"},
		{"retry", "[flags] RUN...", "retry failed or cancelled runs from the steps that did not complete"},
		{"purge", "[flags]", "delete finished runs older than their retention, or than -older-than"},
	}
}

// Run implements Command.
func (c RunsCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		c.usage(stderr)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		c.usage(stdout)
		return ExitOK
	case "list":
		return c.list(ctx, args[1:], stdout, stderr)
	case "show":
		return c.show(ctx, args[1:], stdout, stderr)
	case "events":
		return c.events(ctx, args[1:], stdout, stderr)
	case "cancel", "retry":
		return c.act(ctx, args[0], args[1:], stdout, stderr)
	case "purge":
		return c.purge(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "trellis runs: unknown subcommand %q\n\n", args[0])
	c.usage(stderr)
	return ExitUsage
}

func (RunsCommand) usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("Usage: trellis runs <subcommand> [flags] [arguments]\n\nSubcommands:\n\n")
	for _, s := range runsSubcommands() {
		fmt.Fprintf(&b, "\t%-7s %s\n", s.name, s.summary)
	}
	b.WriteString("\nEach takes -database-url (default $TRELLIS_DATABASE_URL) and -format text|json.\nRun trellis runs <subcommand> -h for its flags.\n")
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

// RunsListOptions are the options of trellis runs list.
type RunsListOptions struct {
	OpsOptions
	Workflow string
	// Status is a comma-separated list of run statuses, in any case.
	Status string
	Tenant string
	// Since and Until bound when the runs were created: an RFC 3339 time,
	// a date (2006-01-02, UTC), or a duration meaning that long ago.
	Since, Until   string
	IdempotencyKey string
	Limit          int
	// After is the cursor a previous page printed.
	After string
}

// Filter turns the options into the listing's filter, relative to now,
// reporting every option that is wrong.
func (o RunsListOptions) Filter(now time.Time) (ops.RunFilter, error) {
	f := ops.RunFilter{
		Workflow: o.Workflow, Tenant: o.Tenant, IdempotencyKey: o.IdempotencyKey, Limit: o.Limit, After: o.After,
	}
	var errs []error
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
	if o.Limit <= 0 {
		errs = append(errs, fmt.Errorf("-limit %d: use 1 to %d", o.Limit, ops.MaxLimit))
	} else if err := f.Validate(); err != nil {
		errs = append(errs, err)
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
	fs.StringVar(&o.Workflow, "workflow", "", "only runs of this workflow `name`")
	fs.StringVar(&o.Status, "status", "", "only runs in these `statuses` (comma-separated: RUNNING, COMPLETED, FAILED, CANCELLED)")
	fs.StringVar(&o.Tenant, "tenant", "", "only runs of this `tenant`")
	fs.StringVar(&o.Since, "since", "", "only runs created at or after this `time` (RFC 3339, a date, or a duration ago such as 24h)")
	fs.StringVar(&o.Until, "until", "", "only runs created before this `time` (as -since)")
	fs.StringVar(&o.IdempotencyKey, "idempotency-key", "", "only the runs triggered with this idempotency `key`")
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
		page, err := a.ListRuns(ctx, filter)
		if err != nil {
			return 0, err
		}
		if o.Format == "json" {
			return -1, printJSON(stdout, page)
		}
		if len(page.Runs) == 0 {
			_, err := fmt.Fprintln(stdout, "no runs")
			return -1, err
		}
		t := newTable(stdout, "ID", "WORKFLOW", "TENANT", "STATUS", "CREATED", "DURATION", "FAILURE")
		for _, r := range page.Runs {
			took := "-"
			if d, ok := r.Duration(); ok {
				took = shortDuration(d)
			}
			failure := ""
			if r.Failure != nil {
				failure = truncate(r.Failure.Step+": "+r.Failure.Error, 40)
			}
			t.row(r.ID.String(), truncate(r.Workflow, 24), truncate(r.Tenant, 20), string(r.Status), ago(now, r.CreatedAt), took, failure)
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
	// Run is the run's id.
	Run string
}

// Validate reports options show cannot run with.
func (o RunsShowOptions) Validate() error {
	_, err := parseRunIDs([]string{o.Run})
	return err
}

// parseRunIDs reads run ids, reporting every one that is not a uuid.
func parseRunIDs(args []string) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	var errs []error
	for _, a := range args {
		id, err := uuid.Parse(a)
		if err != nil {
			errs = append(errs, fmt.Errorf("%q is not a run id (a UUID such as 0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b)", a))
			continue
		}
		ids = append(ids, id)
	}
	return ids, errors.Join(errs...)
}

// oneRun parses the flags and the single run id of show and events.
func (c RunsCommand) oneRun(sub string, args []string, stderr io.Writer) (RunsShowOptions, int) {
	var o RunsShowOptions
	fs := c.flagSet(sub, &o.OpsOptions, "")
	pos, code := parseInterspersed(fs, args, stderr)
	if code >= 0 {
		return o, code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "trellis runs %s: give one run id\n", sub)
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
		r, err := a.GetRun(ctx, uuid.MustParse(o.Run))
		if err != nil {
			return 0, err
		}
		if o.Format == "json" {
			return -1, printJSON(stdout, r)
		}
		return -1, writeRun(stdout, r)
	})
}

// writeRun prints a run: a header, the failure, the steps as a table, then
// the input and outputs as indented JSON.
func writeRun(w io.Writer, r *ops.RunDetail) error {
	h := newTable(w)
	h.row("Run:", r.ID.String())
	h.row("Workflow:", r.Workflow+" ("+r.Version+")")
	h.row("Tenant:", r.Tenant)
	if r.IdempotencyKey != "" {
		h.row("Idempotency key:", r.IdempotencyKey)
	}
	h.row("Status:", string(r.Status))
	h.row("Created:", timestamp(&r.CreatedAt))
	if d, ok := r.Duration(); ok {
		h.row("Finished:", timestamp(r.FinishedAt)+" (after "+shortDuration(d)+")")
	}
	if r.Failure != nil {
		h.row("Failure:", "step "+r.Failure.Step+": "+r.Failure.Error)
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
		case s.WakeAt != nil:
			note = truncate("next attempt "+timestamp(s.WakeAt)+": "+s.Error, 60)
		case s.Worker != "":
			note = "on worker " + s.Worker
		}
		t.row(s.Name, s.Kind, string(s.Status), fmt.Sprint(s.Attempts), timestamp(s.StartedAt), took, note)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nInput:")
	indentJSON(w, "  ", r.Input)
	for _, s := range r.Steps {
		if len(s.Output) > 0 {
			fmt.Fprintf(w, "\nOutput of %s:\n", s.Name)
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
		events, err := a.Events(ctx, uuid.MustParse(o.Run))
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

// RunsActOptions are the options of trellis runs cancel and retry.
type RunsActOptions struct {
	OpsOptions
	// Runs are the runs' ids.
	Runs []string
}

// Validate reports options cancel and retry cannot run with.
func (o RunsActOptions) Validate() error {
	if len(o.Runs) == 0 {
		return errors.New("give the ids of the runs")
	}
	_, err := parseRunIDs(o.Runs)
	return err
}

func (c RunsCommand) act(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) int {
	var o RunsActOptions
	fs := c.flagSet(sub, &o.OpsOptions, "\nEach run's outcome is printed; the exit status is 1 if a run was not found or\nthe database failed, 0 otherwise (a run left as it was counts as done).")
	pos, code := parseInterspersed(fs, args, stderr)
	if code >= 0 {
		return code
	}
	o.Runs = pos
	if sub == "cancel" {
		return RunsCancel(ctx, o, stdout, stderr)
	}
	return RunsRetry(ctx, o, stdout, stderr)
}

// RunsCancel runs trellis runs cancel with opts and returns its exit code.
func RunsCancel(ctx context.Context, o RunsActOptions, stdout, stderr io.Writer) int {
	return runsAct(ctx, "runs cancel", o, stdout, stderr, (*ops.Admin).Cancel)
}

// RunsRetry runs trellis runs retry with opts and returns its exit code.
func RunsRetry(ctx context.Context, o RunsActOptions, stdout, stderr io.Writer) int {
	return runsAct(ctx, "runs retry", o, stdout, stderr, (*ops.Admin).Retry)
}

func runsAct(ctx context.Context, name string, o RunsActOptions, stdout, stderr io.Writer,
	act func(*ops.Admin, context.Context, ...uuid.UUID) []ops.ActionResult,
) int {
	return opsRun(ctx, name, o.OpsOptions, o.Validate(), 0, stderr, func(a *ops.Admin) (int, error) {
		ids, _ := parseRunIDs(o.Runs)
		results := act(a, ctx, ids...)
		code := -1
		if slices.ContainsFunc(results, func(r ops.ActionResult) bool { return !r.OK() }) {
			code = ExitProblems
		}
		if o.Format == "json" {
			return code, printJSON(stdout, results)
		}
		t := newTable(stdout)
		for _, r := range results {
			what := string(r.Outcome)
			switch {
			case r.Status != "":
				what += " (" + string(r.Status) + ")"
			case r.Error != "":
				what += ": " + r.Error
			}
			t.row(r.Run.String(), what)
		}
		return code, t.flush()
	})
}
