package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// WorkersCommand is trellis workers: the workers, their heartbeats and
// leases, and which one leads.
type WorkersCommand struct {
	// Clock is the time heartbeats are measured from; nil is the system
	// clock.
	Clock clock.Clock
}

// Name implements Command.
func (WorkersCommand) Name() string { return "workers" }

// Summary implements Command.
func (WorkersCommand) Summary() string {
	return "list workers: heartbeats, running tasks, the leader"
}

// WorkersOptions are the options of trellis workers.
type WorkersOptions struct {
	OpsOptions
	// StaleAfter is how long a worker may go without heartbeating before
	// it counts as silent: the engines' Config.StaleAfter.
	StaleAfter time.Duration
}

// Validate reports options workers cannot run with.
func (o WorkersOptions) Validate() error {
	if o.StaleAfter < 2*time.Second {
		return fmt.Errorf("-stale-after %v: use at least 2s (the engines' StaleAfter, 30s unless configured)", o.StaleAfter)
	}
	return nil
}

// Run implements Command.
func (c WorkersCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := WorkersOptions{OpsOptions: OpsOptions{Clock: c.Clock}}
	fs := newFlagSet(c.Name(), "[flags]",
		"Workers lists the workers the database knows, with when each last heartbeated,\nits state: alive (heartbeated within -stale-after) or silent (not since: it\nstopped, hangs or lost the database), how many tasks it is running, and which\none leads (fires timers and recovers silent workers' tasks).")
	addOpsFlags(fs, &o.OpsOptions)
	fs.DurationVar(&o.StaleAfter, "stale-after", 30*time.Second, "how long a worker may go without heartbeating before it counts as silent (the engines' StaleAfter)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "trellis workers: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	return Workers(ctx, o, stdout, stderr)
}

// Workers runs trellis workers with opts and returns its exit code.
func Workers(ctx context.Context, o WorkersOptions, stdout, stderr io.Writer) int {
	return opsRun(ctx, "workers", o.OpsOptions, o.Validate(), o.StaleAfter, stderr, func(a *ops.Admin) (int, error) {
		workers, err := a.Workers(ctx)
		if err != nil {
			return 0, err
		}
		if o.Format == "json" {
			return -1, printJSON(stdout, workers)
		}
		if len(workers) == 0 {
			_, err := fmt.Fprintln(stdout, "no workers")
			return -1, err
		}
		now := o.now()
		// The LABELS column only when some worker declared labels.
		labelled := slices.ContainsFunc(workers, func(w ops.Worker) bool { return len(w.Labels) > 0 })
		head := []string{"WORKER", "STATE", "HEARTBEAT", "RUNNING", "LEADER"}
		if labelled {
			head = append(head, "LABELS")
		}
		t := newTable(stdout, head...)
		for _, w := range workers {
			leader := ""
			if w.Leader {
				leader = "leader"
			}
			row := []string{truncate(w.ID, 48), string(w.State()), ago(now, w.HeartbeatAt), fmt.Sprint(w.Leases), leader}
			if labelled {
				row = append(row, truncate(strings.Join(w.Labels, ","), 80))
			}
			t.row(row...)
			t.paint(1, statusStyle(string(w.State())))
		}
		if err := t.flush(); err != nil {
			return 0, err
		}
		return -1, printUnserved(ctx, a, stdout, now)
	})
}

// printUnserved prints, after a listing of the queue or the workers, the
// queued work no live worker can claim (runtime.UnservedWork), if any.
func printUnserved(ctx context.Context, a *ops.Admin, w io.Writer, now time.Time) error {
	unserved, err := a.Unserved(ctx)
	if err != nil || len(unserved) == 0 {
		return err
	}
	if _, err := fmt.Fprintln(w, "\nqueued work no live worker can claim (trellis queue -unserved):"); err != nil {
		return err
	}
	return unservedTable(w, unserved, now)
}

// unservedTable prints unserved work as a table.
func unservedTable(w io.Writer, unserved []runtime.UnservedWork, now time.Time) error {
	t := newTable(w, "WORKFLOW", "VERSION", "QUEUED", "OLDEST WAIT", "STATE", "REASON")
	for _, u := range unserved {
		wait := "-"
		if !u.OldestQueuedAt.IsZero() {
			wait = shortDuration(now.Sub(u.OldestQueuedAt))
		}
		state := "waiting"
		if u.Stranded {
			state = "stranded"
		}
		version := u.Version
		if version == "" {
			version = "-"
		}
		t.row(truncate(u.Workflow, 24), truncate(version, 48), fmt.Sprint(u.Queued), wait, state, truncate(u.Reason, 160))
		t.paint(4, warning)
	}
	return t.flush()
}

// QueueCommand is trellis queue: the queued and running tasks, and the
// oldest wait, per tenant and workflow.
type QueueCommand struct {
	// Clock is the time waits are measured from; nil is the system clock.
	Clock clock.Clock
}

// Name implements Command.
func (QueueCommand) Name() string { return "queue" }

// Summary implements Command.
func (QueueCommand) Summary() string {
	return "show queued and running tasks and the oldest wait, per tenant and workflow"
}

// Run implements Command.
func (c QueueCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := QueueOptions{OpsOptions: OpsOptions{Clock: c.Clock}}
	fs := newFlagSet(c.Name(), "[flags]",
		"Queue shows, per tenant and workflow with work queued or running, how many\ntasks wait for a worker, how many run, and how long the oldest has waited;\nthen the queued work no live worker can claim (no worker alive serves its\nworkflow version), which -unserved lists alone.")
	addOpsFlags(fs, &o.OpsOptions)
	fs.BoolVar(&o.Unserved, "unserved", false, "list only the queued work no live worker can claim, per workflow version, with why")
	fs.DurationVar(&o.StaleAfter, "stale-after", 30*time.Second, "how long a worker may go without heartbeating before it no longer counts as serving (the engines' StaleAfter)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "trellis queue: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	return Queue(ctx, o, stdout, stderr)
}

// QueueOptions are the options of trellis queue.
type QueueOptions struct {
	OpsOptions
	// Unserved lists only the queued work no live worker can claim.
	Unserved bool
	// StaleAfter is how long a worker may go without heartbeating before
	// it no longer counts as serving its versions: the engines'
	// Config.StaleAfter.
	StaleAfter time.Duration
}

// Validate reports options queue cannot run with.
func (o QueueOptions) Validate() error {
	return WorkersOptions{StaleAfter: o.StaleAfter}.Validate()
}

// Queue runs trellis queue with opts and returns its exit code.
func Queue(ctx context.Context, o QueueOptions, stdout, stderr io.Writer) int {
	if o.StaleAfter == 0 {
		o.StaleAfter = 30 * time.Second
	}
	return opsRun(ctx, "queue", o.OpsOptions, o.Validate(), o.StaleAfter, stderr, func(a *ops.Admin) (int, error) {
		if o.Unserved {
			unserved, err := a.Unserved(ctx)
			switch {
			case err != nil:
				return 0, err
			case o.Format == "json":
				if unserved == nil {
					unserved = []runtime.UnservedWork{}
				}
				return -1, printJSON(stdout, unserved)
			case len(unserved) == 0:
				_, err := fmt.Fprintln(stdout, "every queued task has a live worker that serves its version")
				return -1, err
			}
			return -1, unservedTable(stdout, unserved, o.now())
		}
		groups, err := a.Queue(ctx)
		if err != nil {
			return 0, err
		}
		if o.Format == "json" {
			return -1, printJSON(stdout, groups)
		}
		if len(groups) == 0 {
			_, err := fmt.Fprintln(stdout, "nothing queued or running")
			return -1, err
		}
		now := o.now()
		// The STATE column only when a pause holds some group's tasks.
		paused := slices.ContainsFunc(groups, func(g ops.QueueGroup) bool { return g.Paused })
		head := []string{"TENANT", "WORKFLOW", "QUEUED", "RUNNING", "OLDEST WAIT"}
		if paused {
			head = append(head, "STATE")
		}
		t := newTable(stdout, head...)
		held := 0
		for _, g := range groups {
			wait := "-"
			if !g.OldestQueuedAt.IsZero() {
				wait = shortDuration(now.Sub(g.OldestQueuedAt))
			}
			row := []string{truncate(g.Tenant, 24), truncate(g.Workflow, 24), fmt.Sprint(g.Queued), fmt.Sprint(g.Running), wait}
			if paused {
				row = append(row, map[bool]string{false: "active", true: "paused"}[g.Paused])
			}
			t.row(row...)
			if g.Paused {
				held += g.Queued
				t.paint(len(row)-1, warning)
			}
		}
		if err := t.flush(); err != nil {
			return 0, err
		}
		if paused {
			if _, err = fmt.Fprintf(stdout, "\n%s of paused workflows, claimed once resumed (trellis workflows resume NAME)\n", plural(held, "queued task")); err != nil {
				return 0, err
			}
		}
		return -1, printUnserved(ctx, a, stdout, now)
	})
}

// WorkflowsCommand is trellis workflows: the stored workflow versions,
// and pausing and resuming workflows.
type WorkflowsCommand struct {
	// Clock stamps the pauses made; nil is the system clock.
	Clock clock.Clock
}

// Name implements Command.
func (WorkflowsCommand) Name() string { return "workflows" }

// Summary implements Command.
func (WorkflowsCommand) Summary() string {
	return "list the workflow versions stored in the database; pause or resume a workflow (list|pause|resume)"
}

// Run implements Command.
func (c WorkflowsCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	names := []string{"list", "pause", "resume"}
	sub, args := splitSubcommand(args, append(names, "help"))
	switch sub {
	case "help":
		c.usage(stdout)
		return ExitOK
	case "list", "":
		o := OpsOptions{Clock: c.Clock}
		fs := newFlagSet(c.Name(), "[flags]",
			"Workflows lists the workflow versions stored in the database (each version a\nrun was created with), by name, newest first, with the events that start them,\ntheir schedules and the pauses of each workflow.")
		addOpsFlags(fs, &o)
		if code := parseFlags(fs, args, stderr); code >= 0 {
			return code
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "trellis workflows: unexpected argument %q\n", fs.Arg(0))
			return ExitUsage
		}
		return Workflows(ctx, o, stdout, stderr)
	case "pause", "resume":
		return c.pause(ctx, sub, args, stdout, stderr)
	}
	unknownSubcommand(stderr, c.Name(), sub, names)
	c.usage(stderr)
	return ExitUsage
}

func (WorkflowsCommand) usage(w io.Writer) {
	fmt.Fprint(w, `Usage: trellis workflows <subcommand> [flags] [arguments]

Subcommands:

	list    list the stored workflow versions and the pauses of each workflow (the default)
	pause   pause a workflow: no task of it is claimed until resumed: trellis workflows pause NAME [-tenant T]
	resume  resume a paused workflow: trellis workflows resume NAME [-tenant T]

Each takes -database-url (default $TRELLIS_DATABASE_URL) and -format text|json.
`)
}

// schedulesText says a version's schedules in a cell: "nightly (0 3 * * *
// Europe/Amsterdam), hourly (@hourly)", then those created at run time,
// marked: "ten (*/10 * * * *, api)", "ten (*/10 * * * *, api, paused)".
func schedulesText(ss []runtime.ScheduleSpec, api []runtime.Schedule) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, s.Name+" ("+cronText(s.Cron, s.Timezone)+")")
	}
	for _, s := range api {
		mark := ", api"
		if s.Paused {
			mark += ", paused"
		}
		parts = append(parts, s.Name+" ("+cronText(s.Cron, s.Timezone)+mark+")")
	}
	return strings.Join(parts, ", ")
}

// startOnText says the events that start a version in a cell:
// "order-placed if payload.total > 100, order-cancelled".
func startOnText(ss []runtime.StartOnSpec) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.Event
		if s.If != "" {
			parts[i] += " if " + s.If
		}
	}
	return strings.Join(parts, ", ")
}

// cronText is a cron expression and its time zone, if not UTC.
func cronText(cron, tz string) string {
	if tz != "" {
		return cron + " " + tz
	}
	return cron
}

// Workflows runs trellis workflows with opts and returns its exit code.
func Workflows(ctx context.Context, o OpsOptions, stdout, stderr io.Writer) int {
	return opsRun(ctx, "workflows", o, nil, 0, stderr, func(a *ops.Admin) (int, error) {
		workflows, err := a.Workflows(ctx)
		if err != nil {
			return 0, err
		}
		if o.Format == "json" {
			return -1, printJSON(stdout, workflows)
		}
		if len(workflows) == 0 {
			_, err := fmt.Fprintln(stdout, "no workflows stored")
			return -1, err
		}
		// The SCHEDULES column only when some version has schedules.
		scheduled := slices.ContainsFunc(workflows, func(w ops.WorkflowSummary) bool { return len(w.Schedules)+len(w.APISchedules) > 0 })
		// The STARTS ON column only when some version starts on events.
		events := slices.ContainsFunc(workflows, func(w ops.WorkflowSummary) bool { return len(w.StartOn) > 0 })
		// The PAUSED column only when some workflow is paused.
		paused := slices.ContainsFunc(workflows, func(w ops.WorkflowSummary) bool { return len(w.Paused) > 0 })
		head := []string{"WORKFLOW", "VERSION", "STEPS", "ON FAILURE", "SAVED"}
		if events {
			head = append(head, "STARTS ON")
		}
		if scheduled {
			head = append(head, "SCHEDULES")
		}
		if paused {
			head = append(head, "PAUSED")
		}
		t := newTable(stdout, head...)
		for _, w := range workflows {
			row := []string{w.Name, w.Version, fmt.Sprint(w.Steps), w.OnFailure, timestamp(w.SavedAt)}
			if events {
				row = append(row, startOnText(w.StartOn))
			}
			if scheduled {
				row = append(row, schedulesText(w.Schedules, w.APISchedules))
			}
			if paused {
				row = append(row, pausesText(w.Paused))
			}
			t.row(row...)
			if paused && len(w.Paused) > 0 {
				t.paint(len(row)-1, warning)
			}
		}
		return -1, t.flush()
	})
}
