package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// SchedulesCommand is trellis schedules: it lists the cron schedules of
// the stored workflows, those of their files and those created at run
// time, and deletes, pauses or resumes the latter.
type SchedulesCommand struct {
	// Clock stamps the schedules paused and resumed; nil is the system
	// clock.
	Clock clock.Clock
}

// Name implements Command.
func (SchedulesCommand) Name() string { return "schedules" }

// Summary implements Command.
func (SchedulesCommand) Summary() string {
	return "list cron schedules; delete, pause or resume those created at run time (list|delete|pause|resume)"
}

// SchedulesOptions are the options of trellis schedules list.
type SchedulesOptions struct {
	OpsOptions
	// Workflow, when set, lists that workflow's schedules only.
	Workflow string
}

// ScheduleActOptions are the options of trellis schedules delete, pause
// and resume: the schedule they act on.
type ScheduleActOptions struct {
	OpsOptions
	Workflow, Name string
}

// Run implements Command.
func (c SchedulesCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	names := []string{"list", "delete", "pause", "resume"}
	sub, args := splitSubcommand(args, append(names, "help"))
	switch sub {
	case "help":
		c.usage(stdout)
		return ExitOK
	case "list", "":
		o := SchedulesOptions{OpsOptions: OpsOptions{Clock: c.Clock}}
		fs := newFlagSet("schedules list", "[flags]",
			"List the cron schedules of the stored workflows, by workflow and name: those the\nfile of each workflow's newest stored version declares (SOURCE file) and those\ncreated at run time (SOURCE api).")
		addOpsFlags(fs, &o.OpsOptions)
		fs.StringVar(&o.Workflow, "workflow", "", "list this `workflow`'s schedules only")
		if code := parseFlags(fs, args, stderr); code >= 0 {
			return code
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "trellis schedules list: unexpected argument %q\n", fs.Arg(0))
			return ExitUsage
		}
		return SchedulesList(ctx, o, stdout, stderr)
	case "delete", "pause", "resume":
		o := ScheduleActOptions{OpsOptions: OpsOptions{Clock: c.Clock}}
		fs := newFlagSet("schedules "+sub, "[flags] WORKFLOW NAME",
			strings.ToUpper(sub[:1])+sub[1:]+" a schedule created at run time. Schedules of a workflow file change with\nthe file. Engines notice within their ScheduleRefresh (10s unless configured).")
		addOpsFlags(fs, &o.OpsOptions)
		if code := parseFlags(fs, args, stderr); code >= 0 {
			return code
		}
		positional := fs.Args()
		if len(positional) != 2 {
			fmt.Fprintf(stderr, "trellis schedules %s: give a workflow and a schedule name: trellis schedules %s WORKFLOW NAME\n", sub, sub)
			return ExitUsage
		}
		o.Workflow, o.Name = positional[0], positional[1]
		return ScheduleAct(ctx, sub, o, stdout, stderr)
	}
	unknownSubcommand(stderr, c.Name(), sub, names)
	c.usage(stderr)
	return ExitUsage
}

func (SchedulesCommand) usage(w io.Writer) {
	fmt.Fprint(w, `Usage: trellis schedules <subcommand> [flags] [arguments]

Subcommands:

	list    list cron schedules, of workflow files and created at run time (the default)
	delete  delete a schedule created at run time: trellis schedules delete WORKFLOW NAME
	pause   pause a schedule created at run time: it starts no run until resumed
	resume  resume a paused schedule; the ticks that came while it was paused are not fired

Each takes -database-url (default $TRELLIS_DATABASE_URL) and -format text|json.
`)
}

// SchedulesList runs trellis schedules list with opts and returns its
// exit code.
func SchedulesList(ctx context.Context, o SchedulesOptions, stdout, stderr io.Writer) int {
	return opsRun(ctx, "schedules list", o.OpsOptions, nil, 0, stderr, func(a *ops.Admin) (int, error) {
		schedules, err := a.Schedules(ctx, o.Workflow)
		if err != nil {
			return 0, err
		}
		if o.Format == "json" {
			return -1, printJSON(stdout, schedules)
		}
		if len(schedules) == 0 {
			_, err := fmt.Fprintln(stdout, "no schedules")
			return -1, err
		}
		t := newTable(stdout, "WORKFLOW", "SCHEDULE", "SOURCE", "CRON", "TIMEZONE", "TENANT", "STATE", "INPUT", "UPDATED")
		for _, s := range schedules {
			state, tz := "active", s.Timezone
			if s.Paused {
				state = "paused"
			}
			if tz == "" {
				tz = "UTC"
			}
			t.row(s.Workflow, s.Name, s.Source, s.Cron, tz, truncate(s.Tenant, 24), state, truncate(string(s.Input), 40), timestamp(&s.UpdatedAt))
		}
		return -1, t.flush()
	})
}

// ScheduleAct runs trellis schedules delete, pause or resume (verb) with
// opts and returns its exit code.
func ScheduleAct(ctx context.Context, verb string, o ScheduleActOptions, stdout, stderr io.Writer) int {
	return opsRun(ctx, "schedules "+verb, o.OpsOptions, nil, 0, stderr, func(a *ops.Admin) (int, error) {
		var err error
		var s runtime.Schedule
		switch e := a.Engine(); verb {
		case "delete":
			err = e.DeleteSchedule(ctx, o.Workflow, o.Name)
		case "pause":
			s, err = e.PauseSchedule(ctx, o.Workflow, o.Name)
		default:
			s, err = e.ResumeSchedule(ctx, o.Workflow, o.Name)
		}
		if errors.Is(err, runtime.ErrScheduleNotFound) {
			hint := "; trellis schedules list shows them"
			if file, lerr := a.Schedules(ctx, o.Workflow); lerr == nil {
				for _, f := range file {
					if f.Name == o.Name && f.Source == runtime.ScheduleSourceFile {
						hint = "; it is declared in the workflow file: change the file to change it"
					}
				}
			}
			return 0, fmt.Errorf("%w%s", err, hint)
		}
		if err != nil {
			return 0, err
		}
		done := map[string]string{"delete": "deleted", "pause": "paused", "resume": "resumed"}[verb]
		if o.Format == "json" {
			if verb == "delete" {
				return -1, printJSON(stdout, struct {
					Workflow string `json:"workflow"`
					Name     string `json:"name"`
					Deleted  bool   `json:"deleted"`
				}{o.Workflow, o.Name, true})
			}
			return -1, printJSON(stdout, a.RedactSchedule(ctx, s))
		}
		_, err = fmt.Fprintf(stdout, "%s schedule %s of %s\n", done, o.Name, o.Workflow)
		return -1, err
	})
}
