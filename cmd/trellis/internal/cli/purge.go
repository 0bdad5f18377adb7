package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// RunsPurgeOptions are the options of trellis runs purge.
type RunsPurgeOptions struct {
	OpsOptions
	// Status is a comma-separated list of finished run statuses, in any
	// case; empty means COMPLETED, FAILED and CANCELLED.
	Status string
	// OlderThan is how long ago a run must have finished: a Go duration
	// (720h) or whole days (30d). Empty means the engine's default
	// retention of each status.
	OlderThan string
	Workflow  string
	Tenant    string
	// Tags are -tag flags, each key=value: the runs carry every one.
	Tags TagFlags
	// DryRun counts the runs instead of deleting them.
	DryRun bool
	// Yes deletes without asking.
	Yes bool
	// Confirm asks the user a yes-or-no question; nil means there is no
	// one to ask (standard input is not a terminal), and deleting then
	// needs Yes.
	Confirm func(question string) (bool, error)
}

// Filter turns the options into Engine.PurgeRuns's filter, reporting every
// option that is wrong.
func (o RunsPurgeOptions) Filter() (runtime.PurgeFilter, error) {
	f := runtime.PurgeFilter{Workflow: o.Workflow, Tenant: o.Tenant, DryRun: o.DryRun}
	tags, errs := o.Tags.tags()
	f.Tags = tags
	for _, s := range strings.Split(o.Status, ",") {
		s = strings.ToUpper(strings.TrimSpace(s))
		switch {
		case s == "":
		case s == string(runtime.RunRunning):
			errs = append(errs, errors.New("-status RUNNING: only finished runs are purged: use COMPLETED, FAILED or CANCELLED"))
		case !isFinished(runtime.RunStatus(s)):
			errs = append(errs, fmt.Errorf("-status %q: unknown run status: use COMPLETED, FAILED or CANCELLED (comma-separated)", s))
		default:
			f.Statuses = append(f.Statuses, runtime.RunStatus(s))
		}
	}
	if o.OlderThan != "" {
		age, err := parseAge(o.OlderThan)
		if err != nil {
			errs = append(errs, err)
		}
		f.OlderThan = age
	}
	return f, errors.Join(errs...)
}

func isFinished(s runtime.RunStatus) bool {
	for _, f := range runtime.FinishedStatuses() {
		if s == f {
			return true
		}
	}
	return false
}

// parseAge reads -older-than: a Go duration, or a whole number of days.
func parseAge(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if days, ok := strings.CutSuffix(v, "d"); ok && err != nil {
		if n, nerr := strconv.Atoi(days); nerr == nil && n <= 100*365 {
			d, err = time.Duration(n)*24*time.Hour, nil
		}
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("-older-than %q: give a duration such as 720h or 90m, or days such as 30d", v)
	case d <= 0:
		return 0, fmt.Errorf("-older-than %q: give a positive age", v)
	}
	return d, nil
}

func (c RunsCommand) purge(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o RunsPurgeOptions
	fs := c.flagSet("purge", &o.OpsOptions, "\n"+
		"Each run goes with its steps' outputs and its event log. Runs with live work (a\n"+
		"failure handler still to run) are kept. Without -yes it counts the runs first and\n"+
		"asks before deleting them, which needs a terminal; not confirmed, it deletes\n"+
		"nothing and exits 3. Engines delete runs past their retention on their own\n"+
		"(runtime.Config.Retention); this is for a one-off.")
	fs.StringVar(&o.Status, "status", "", "only runs in these `statuses` (comma-separated: COMPLETED, FAILED, CANCELLED; default all three)")
	fs.StringVar(&o.OlderThan, "older-than", "", "only runs that finished longer ago than this `age` (720h, 30d; default the engines' default retention: 7d completed and cancelled, 30d failed)")
	fs.StringVar(&o.Workflow, "workflow", "", "only runs of this workflow `name`")
	fs.StringVar(&o.Tenant, "tenant", "", "only runs of this `tenant`")
	fs.Var(&o.Tags, "tag", "only the runs tagged `key=value` (repeatable: runs with every tag given)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "count the runs per status; delete nothing")
	fs.BoolVar(&o.Yes, "yes", false, "delete without asking (needed when standard input is not a terminal)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "trellis runs purge: unexpected argument %q (filters are flags)\n", fs.Arg(0))
		return ExitUsage
	}
	o.Confirm = c.confirm(stderr)
	return RunsPurge(ctx, o, stdout, stderr)
}

// RunsPurge runs trellis runs purge with opts and returns its exit code.
// Unless DryRun or Yes, it counts the runs, shows the count on stderr
// and deletes them only if Confirm says yes.
func RunsPurge(ctx context.Context, o RunsPurgeOptions, stdout, stderr io.Writer) int {
	filter, ferr := o.Filter()
	return opsRun(ctx, "runs purge", o.OpsOptions, ferr, 0, stderr, func(a *ops.Admin) (int, error) {
		if !o.DryRun && !o.Yes {
			counted, err := a.Engine().PurgeRuns(ctx, runtime.PurgeFilter{
				Statuses: filter.Statuses, OlderThan: filter.OlderThan, Workflow: filter.Workflow, Tenant: filter.Tenant, Tags: filter.Tags, DryRun: true,
			})
			if err != nil {
				return 0, err
			}
			if counted.Runs == 0 {
				return -1, writePurged(stdout, o.Format, counted)
			}
			if o.Confirm == nil {
				fmt.Fprintf(stderr, "trellis runs purge: %s would be deleted; nothing deleted: standard input is not a terminal to confirm on, so run again with -yes to delete them (-dry-run counts them)\n",
					plural(counted.Runs, "run"))
				return ExitNotConfirmed, nil
			}
			if err := writePurge(stderr, counted); err != nil {
				return 0, err
			}
			yes, err := o.Confirm(fmt.Sprintf("delete %s? [y/N] ", plural(counted.Runs, "run")))
			if err != nil {
				return 0, fmt.Errorf("asking for confirmation: %w", err)
			}
			if !yes {
				fmt.Fprintln(stderr, "trellis runs purge: not confirmed; nothing deleted")
				return ExitNotConfirmed, nil
			}
			// What was counted, not the runs that aged since.
			filter.Now = counted.Now
		}
		res, err := a.Engine().PurgeRuns(ctx, filter)
		if res != nil {
			if werr := writePurged(stdout, o.Format, res); werr != nil && err == nil {
				err = werr
			}
		}
		return -1, err
	})
}

// writePurged prints PurgeRuns's result: the table and a total, or JSON.
func writePurged(w io.Writer, format string, r *runtime.PurgeResult) error {
	if format == "json" {
		return printJSON(w, r)
	}
	return writePurge(w, r)
}

// writePurge prints a purge's result as a table per status and a line
// saying what it did.
func writePurge(w io.Writer, r *runtime.PurgeResult) error {
	t := newTable(w, "STATUS", "OLDER THAN", "FINISHED BEFORE", "RUNS")
	for _, c := range r.Statuses {
		if c.KeptForever {
			t.row(string(c.Status), "kept forever", "-", "-")
		} else {
			t.row(string(c.Status), shortDuration(r.Now.Sub(*c.FinishedBefore)), timestamp(c.FinishedBefore), strconv.Itoa(c.Runs))
		}
		t.paint(0, statusStyle(string(c.Status)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	var err error
	switch {
	case r.DryRun && r.Runs == 0:
		_, err = fmt.Fprintln(w, "\nnothing to delete")
	case r.DryRun:
		_, err = fmt.Fprintf(w, "\nwould delete %s (dry run: nothing was deleted)\n", plural(r.Runs, "run"))
	default:
		_, err = fmt.Fprintf(w, "\ndeleted %s\n", plural(r.Runs, "run"))
	}
	return err
}

// plural says "1 run" or "3 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// isTerminal reports whether f is a terminal (not /dev/null, a pipe or a
// file).
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// askOn asks questions on out and reads the answers from in: y or yes
// (any case) is yes; anything else, or the end of the input, is no.
func askOn(in io.Reader, out io.Writer) func(string) (bool, error) {
	r := bufio.NewReader(in)
	return func(question string) (bool, error) {
		fmt.Fprint(out, question)
		line, err := r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true, nil
		}
		return false, nil
	}
}
