package cli

import (
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

func TestWorkflowsPauseResume(t *testing.T) {
	e := newOpsEnv(t)
	e.populate() // beta's ops run and a chain run are queued

	if out := e.ok("workflows", "pause", "ops", "-tenant", "beta"); out != "paused ops for tenant beta\nops is paused for beta (1 queued)\n" {
		t.Errorf("workflows pause ops -tenant beta = %q", out)
	}
	e.golden("queue-paused.txt", e.ok("queue"))
	e.golden("workflows-paused.txt", e.ok("workflows"))
	var groups []ops.QueueGroup
	e.json(&groups, "queue")
	for _, g := range groups {
		if want := g.Workflow == "ops" && g.Tenant == "beta"; g.Paused != want {
			t.Errorf("queue -format json: %s of %s paused %v, want %v", g.Workflow, g.Tenant, g.Paused, want)
		}
	}
	// The queued run stays queued while paused.
	e.h.RunUntilIdle()
	if got := e.h.Steps(e.runs[len(e.runs)-1]); got["prepare"] != runtime.TaskQueued {
		t.Errorf("beta's ops run while paused: %v, want prepare QUEUED", got)
	}

	if out := e.ok("workflows", "pause", "ops", "-tenant", "beta"); out != "ops was already paused for tenant beta\nops is paused for beta (1 queued)\n" {
		t.Errorf("pausing again = %q", out)
	}
	var made []runtime.WorkflowPause
	e.json(&made, "workflows", "pause", "ops")
	if len(made) != 1 || made[0].Workflow != "ops" || made[0].Tenant != "" || !made[0].PausedAt.Equal(e.h.Now()) {
		t.Errorf("workflows pause ops -format json = %+v, want the pause of every tenant, made now", made)
	}
	if out := e.ok("workflows", "resume", "ops", "-tenant", "beta"); out != "resumed ops for tenant beta\nops is paused for every tenant (1 queued)\n" {
		t.Errorf("workflows resume ops -tenant beta = %q", out)
	}
	if out := e.ok("workflows", "resume", "ops"); out != "resumed ops for every tenant\n" {
		t.Errorf("workflows resume ops = %q", out)
	}
	if out := e.ok("workflows", "resume", "ops"); out != "ops was not paused for every tenant\n" {
		t.Errorf("resuming again = %q", out)
	}
	if out := e.ok("queue"); strings.Contains(out, "paused") {
		t.Errorf("queue after the resume:\n%s", out)
	}
	e.h.Settle()
	if got := e.h.Result(e.runs[len(e.runs)-1]); got.Status != runtime.RunCompleted {
		t.Errorf("beta's ops run after the resume is %s, want COMPLETED", got.Status)
	}

	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"workflows", "pause", "opz"}, ExitProblems, `no workflow "opz" is stored (a workflow is stored when its first run is created); did you mean "ops"?`},
		{[]string{"workflows", "pause"}, ExitUsage, "give one workflow name: trellis workflows pause NAME [-tenant T]"},
		{[]string{"workflows", "resume", "ops", "-tenant", ""}, ExitUsage, "an empty tenant: leave -tenant out for every tenant"},
		{[]string{"workflows", "pasue", "ops"}, ExitUsage, `unknown subcommand "pasue"; did you mean "pause"?`},
	} {
		code, out, errOut := e.exec(tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("trellis %s = %d, stderr %q; want %d and %q (stdout %q)", strings.Join(tt.args, " "), code, errOut, tt.code, tt.want, out)
		}
	}
}
