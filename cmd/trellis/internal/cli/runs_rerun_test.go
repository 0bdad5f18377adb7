package cli

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
)

// TestRunsRerun reruns runs by id, then in bulk by filter: finished runs
// run again from the step given, running ones are left as they are, and
// a misspelt step is named with a guess; the event log shows the rerun.
func TestRunsRerun(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	status := func(i int) runtime.RunStatus {
		t.Helper()
		r, err := e.h.Engine.Result(t.Context(), e.runs[i])
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	done, queued, stopped := e.runs[runChainDone].String(), e.runs[runChainQueue].String(), e.runs[runChainStop].String()

	code, out, errOut := e.exec("runs", "rerun", "-from", "secnd", done)
	if code != ExitProblems {
		t.Errorf("rerun from a misspelt step exited %d, want %d; stderr %q", code, ExitProblems, errOut)
	}
	e.golden("runs-rerun-unknown-step.txt", out)
	code, out, errOut = e.exec("runs", "rerun", "-from", "second", done, queued, stopped)
	if code != ExitOK {
		t.Errorf("rerun exited %d; stderr %q", code, errOut)
	}
	e.golden("runs-rerun.txt", out)
	if status(runChainDone) != runtime.RunRunning || status(runChainQueue) != runtime.RunRunning || status(runChainStop) != runtime.RunRunning {
		t.Errorf("after the rerun: %s %s %s, want each RUNNING", status(runChainDone), status(runChainQueue), status(runChainStop))
	}
	e.h.Settle()
	if status(runChainDone) != runtime.RunCompleted {
		t.Errorf("the rerun run is %s once settled, want COMPLETED", status(runChainDone))
	}
	e.golden("runs-rerun-events.txt", e.ok("runs", "events", done))
	e.golden("runs-rerun-show.txt", e.ok("runs", "show", done))

	// In bulk: the finished runs of ops the filter selects, after a count
	// and a confirmation.
	filter := []string{"-from", "work", "-workflow", "ops", "-tenant", "acme"}
	e.golden("runs-rerun-dry-run.txt", e.ok(append([]string{"runs", "rerun", "-dry-run"}, filter...)...))
	code, _, errOut = e.exec(append([]string{"runs", "rerun"}, filter...)...)
	if code != ExitNotConfirmed || !strings.Contains(errOut, "selects 2 runs; nothing changed: standard input is not a terminal to confirm on, so run again with -yes to rerun them") {
		t.Errorf("bulk rerun without -yes = %d %q", code, errOut)
	}
	if status(runOpsDone) != runtime.RunCompleted {
		t.Fatalf("a run is %s after a rerun that was not confirmed", status(runOpsDone))
	}
	code, out, errOut = e.execRuns("y\n", append([]string{"rerun"}, filter...)...)
	if code != ExitOK || !strings.Contains(errOut, "rerun 2 runs? [y/N]") || status(runOpsDone) != runtime.RunRunning || status(runOpsFailed) != runtime.RunRunning {
		t.Errorf("bulk rerun answered yes = %d %q %q; runs %s %s", code, out, errOut, status(runOpsDone), status(runOpsFailed))
	}
	e.golden("runs-rerun-bulk.txt", out)

	unknown := uuid.Must(uuid.NewV7()).String()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "rerun", unknown}, "give the step to run again from: -from STEP"},
		{[]string{"runs", "rerun", "-from", "second", "-status", "running"}, "-status RUNNING: rerun acts on runs that are COMPLETED or FAILED or CANCELLED"},
		{[]string{"runs", "rerun", "-from", "second"}, "give the ids of the runs"},
		{[]string{"runs", "retry", "-from", "second", unknown}, "unknown flag -from"},
	} {
		if code, _, errOut := e.exec(tt.args...); code != ExitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("trellis %s = %d %q, want a usage error saying %q", strings.Join(tt.args, " "), code, errOut, tt.want)
		}
	}
}
