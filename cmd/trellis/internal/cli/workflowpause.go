package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/effectivelabs/trellis/internal/suggest"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// PauseOptions are the options of trellis workflows pause and resume.
type PauseOptions struct {
	OpsOptions
	// Workflow is the workflow's name.
	Workflow string
	// Tenants are the tenants to pause or resume; none is every tenant.
	Tenants []string
}

// tenantsFlag collects the values of a repeated -tenant.
type tenantsFlag struct{ tenants *[]string }

func (f tenantsFlag) String() string {
	if f.tenants == nil {
		return ""
	}
	return strings.Join(*f.tenants, ",")
}

func (f tenantsFlag) Set(v string) error {
	if v == "" {
		return fmt.Errorf("an empty tenant: leave -tenant out for every tenant")
	}
	*f.tenants = append(*f.tenants, v)
	return nil
}

// pause parses the arguments of trellis workflows pause or resume (verb)
// and runs it.
func (c WorkflowsCommand) pause(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) int {
	o := PauseOptions{OpsOptions: OpsOptions{Clock: c.Clock}}
	summary := "Pause a workflow (every version of it), for every tenant or for the tenants given:\n" +
		"no worker claims a task of its runs until it is resumed. Running steps finish;\n" +
		"runs are still created and timers still fire, and what they make ready waits."
	if verb == "resume" {
		summary = "Resume a paused workflow, for every tenant (lifting every pause of it) or for the\n" +
			"tenants given: the tasks it held are claimed at once, in the queue's usual order."
	}
	fs := newFlagSet("workflows "+verb, "[flags] NAME", summary)
	addOpsFlags(fs, &o.OpsOptions)
	fs.Var(tenantsFlag{&o.Tenants}, "tenant", "only this `tenant`'s runs (repeat for several; none: every tenant)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "trellis workflows %s: give one workflow name: trellis workflows %s NAME [-tenant T]\n", verb, verb)
		return ExitUsage
	}
	o.Workflow = fs.Arg(0)
	return WorkflowPause(ctx, verb, o, stdout, stderr)
}

// WorkflowPause runs trellis workflows pause or resume (verb) with opts
// and returns its exit code.
func WorkflowPause(ctx context.Context, verb string, o PauseOptions, stdout, stderr io.Writer) int {
	return opsRun(ctx, "workflows "+verb, o.OpsOptions, nil, 0, stderr, func(a *ops.Admin) (int, error) {
		e := a.Engine()
		var done []runtime.WorkflowPause
		var err error
		if verb == "pause" {
			if err := knownWorkflow(ctx, a, o.Workflow); err != nil {
				return 0, err
			}
			done, err = e.PauseWorkflow(ctx, o.Workflow, o.Tenants...)
		} else {
			done, err = e.ResumeWorkflow(ctx, o.Workflow, o.Tenants...)
		}
		if err != nil {
			return 0, err
		}
		if o.Format == "json" {
			if done == nil {
				done = []runtime.WorkflowPause{}
			}
			for i := range done {
				done[i].PausedAt = done[i].PausedAt.UTC()
			}
			return -1, printJSON(stdout, done)
		}
		pauses, err := e.PausedWorkflows(ctx)
		if err != nil {
			return 0, err
		}
		return -1, pauseReport(stdout, verb, o, done, ops.PausesOf(pauses, o.Workflow))
	})
}

// knownWorkflow checks that a workflow of that name is stored, guessing
// the one meant when not: a pause of a misspelt name would hold nothing.
func knownWorkflow(ctx context.Context, a *ops.Admin, name string) error {
	workflows, err := a.Workflows(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, w := range workflows {
		if w.Name == name {
			return nil
		}
		names = append(names, w.Name)
	}
	hint := "; trellis workflows lists them"
	if guess := suggest.Closest(name, names); guess != "" {
		hint = fmt.Sprintf("; did you mean %q?", guess)
	}
	return fmt.Errorf("no workflow %q is stored (a workflow is stored when its first run is created)%s", name, hint)
}

// pauseReport says what a pause or resume did, and what is paused after
// it.
func pauseReport(w io.Writer, verb string, o PauseOptions, done, now []runtime.WorkflowPause) error {
	scopes := o.Tenants
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	var lines []string
	if verb == "pause" {
		for _, tenant := range scopes {
			if slices.ContainsFunc(done, func(p runtime.WorkflowPause) bool { return p.Tenant == tenant }) {
				lines = append(lines, fmt.Sprintf("paused %s %s", o.Workflow, scopeText(tenant)))
			} else {
				lines = append(lines, fmt.Sprintf("%s was already paused %s", o.Workflow, scopeText(tenant)))
			}
		}
	} else {
		for _, p := range done {
			lines = append(lines, fmt.Sprintf("resumed %s %s", o.Workflow, scopeText(p.Tenant)))
		}
		if len(done) == 0 {
			lines = append(lines, fmt.Sprintf("%s was not paused %s", o.Workflow, scopeText(o.Tenants...)))
		}
	}
	if len(now) > 0 {
		lines = append(lines, fmt.Sprintf("%s is paused for %s", o.Workflow, pausesText(now)))
	}
	_, err := fmt.Fprintln(w, strings.Join(lines, "\n"))
	return err
}

// scopeText says which tenants a pause is for.
func scopeText(tenants ...string) string {
	if len(tenants) == 0 || len(tenants) == 1 && tenants[0] == "" {
		return "for every tenant"
	}
	if len(tenants) == 1 {
		return "for tenant " + tenants[0]
	}
	return "for tenants " + strings.Join(tenants, ", ")
}

// pausesText says a workflow's pauses in a cell, each with the queued
// tasks it holds: "every tenant (3 queued)", "acme (1 queued), beta (0
// queued)".
func pausesText(pauses []runtime.WorkflowPause) string {
	var parts []string
	for _, p := range pauses {
		who := truncate(p.Tenant, 24)
		if p.Tenant == "" {
			who = "every tenant"
		}
		parts = append(parts, fmt.Sprintf("%s (%d queued)", who, p.Queued))
	}
	return strings.Join(parts, ", ")
}
