package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// purge runs trellis runs purge against the env's schema, as if at a
// terminal: its question is recorded and answered with answer.
func (e *opsEnv) purge(answer bool, args ...string) (code int, stdout, stderr string, asked []string) {
	e.t.Helper()
	cmd := RunsCommand{Clock: e.h.Clock, Confirm: func(q string) (bool, error) {
		asked = append(asked, q)
		return answer, nil
	}}
	var out, errOut bytes.Buffer
	code = cmd.Run(e.t.Context(), append([]string{"purge", "-database-url", e.url}, args...), &out, &errOut)
	return code, out.String(), errOut.String(), asked
}

// remaining lists the env's runs still in the database, in creation
// order, by their index in e.runs.
func (e *opsEnv) remaining() []int {
	e.t.Helper()
	var page ops.RunPage
	e.json(&page, "runs", "list", "-limit", "1000")
	var out []int
	for i, id := range e.runs {
		if slices.Contains(runIDs(page.Runs), id) {
			out = append(out, i)
		}
	}
	return out
}

func TestRunsPurge(t *testing.T) {
	e := newOpsEnv(t)
	e.populate() // runs end from 00:00 to 00:05 (the failed one at 00:03)
	h := e.h
	h.Clock.Set(h.Start.Add(8 * 24 * time.Hour))

	// By default, the engines' retention: completed and cancelled runs
	// after 7 days (here: the two completed ones and the cancelled one),
	// failed ones after 30.
	code, out, errOut, _ := e.purge(false, "-dry-run")
	if code != ExitOK {
		t.Fatalf("purge -dry-run = %d: %s", code, errOut)
	}
	e.golden("runs-purge-dry-run.txt", out)
	all := []int{runChainDone, runOpsFailed, runOpsDone, runChainQueue, runChainStop, runOpsBeta}
	if got := e.remaining(); !cmp.Equal(got, all) {
		t.Fatalf("after a dry run, runs %v remain; want all", got)
	}

	// Without a terminal to ask (no Confirm), deleting needs -yes.
	var stdout, stderr bytes.Buffer
	code = RunsPurge(t.Context(), RunsPurgeOptions{OpsOptions: OpsOptions{DatabaseURL: e.url, Format: "text", Clock: h.Clock}}, &stdout, &stderr)
	if errOut = stderr.String(); code != ExitNotConfirmed || errOut != "trellis runs purge: 3 runs would be deleted; nothing deleted: standard input is not a terminal to confirm on, so run again with -yes to delete them (-dry-run counts them)\n" {
		t.Errorf("purge without a terminal or -yes = %d %q, want it not confirmed", code, errOut)
	}
	if got := e.remaining(); !cmp.Equal(got, all) {
		t.Fatalf("after a purge without -yes, runs %v remain; want all", got)
	}

	// On a terminal, it counts, asks, and deletes only when told yes.
	code, out, errOut, asked := e.purge(false)
	if code != ExitNotConfirmed || out != "" || !strings.Contains(errOut, "not confirmed; nothing deleted") || !cmp.Equal(asked, []string{"delete 3 runs? [y/N] "}) {
		t.Errorf("purge answered no = %d, stdout %q, stderr %q, asked %q", code, out, errOut, asked)
	}
	if got := e.remaining(); !cmp.Equal(got, all) {
		t.Fatalf("after answering no, runs %v remain; want all", got)
	}
	code, out, errOut, asked = e.purge(true)
	if code != ExitOK || len(asked) != 1 {
		t.Fatalf("purge answered yes = %d, asked %q: %s", code, asked, errOut)
	}
	e.golden("runs-purge.txt", out)
	if !strings.Contains(errOut, "CANCELLED  7d00h") {
		t.Errorf("the count shown before asking is missing from stderr:\n%s", errOut)
	}
	if got, want := e.remaining(), []int{runOpsFailed, runChainQueue, runOpsBeta}; !cmp.Equal(got, want) {
		t.Errorf("after the purge, runs %v remain; want %v", got, want)
	}

	// Nothing left to delete: no question.
	code, out, _, asked = e.purge(true)
	if code != ExitOK || len(asked) != 0 || !strings.HasSuffix(out, "\nnothing to delete\n") {
		t.Errorf("purge with nothing to delete = %d, asked %q, stdout:\n%s", code, asked, out)
	}

	// An age, a status and a tenant of the user's, with -yes, as JSON.
	var res runtime.PurgeResult
	e.json(&res, "runs", "purge", "-status", "failed", "-older-than", "1d", "-tenant", "acme", "-yes")
	before := h.Now().Add(-24 * time.Hour).UTC()
	want := runtime.PurgeResult{Now: h.Now().UTC(), Runs: 1, Statuses: []runtime.PurgeCount{
		{Status: runtime.RunFailed, FinishedBefore: &before, Runs: 1},
	}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("purge -format json (-want +got):\n%s", diff)
	}
	if got, want := e.remaining(), []int{runChainQueue, runOpsBeta}; !cmp.Equal(got, want) {
		t.Errorf("after purging the failed run, runs %v remain; want %v (running runs stay)", got, want)
	}
	if _, err := h.Engine.Result(t.Context(), e.runs[runOpsFailed]); err == nil {
		t.Error("the purged failed run can still be read")
	}
	if h.Engine.RetryRun(t.Context(), e.runs[runOpsFailed]) == nil {
		t.Error("the purged failed run was retried")
	}
}

func TestRunsPurgeErrors(t *testing.T) {
	e := newOpsEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-status", "running", "-yes"}, "-status RUNNING: only finished runs are purged: use COMPLETED, FAILED or CANCELLED"},
		{[]string{"-status", "completed,gone", "-yes"}, `-status "GONE": unknown run status: use COMPLETED, FAILED or CANCELLED`},
		{[]string{"-older-than", "a week", "-yes"}, `-older-than "a week": give a duration such as 720h or 90m, or days such as 30d`},
		{[]string{"-older-than", "-2h", "-yes"}, `-older-than "-2h": give a positive age`},
		{[]string{"-older-than", "0d", "-yes"}, `-older-than "0d": give a positive age`},
		{[]string{"-format", "yaml", "-yes"}, `unknown format "yaml"`},
		{[]string{"-yes", "chain"}, `unexpected argument "chain"`},
	}
	for _, tt := range tests {
		code, out, errOut := e.exec(append([]string{"runs", "purge"}, tt.args...)...)
		if code != ExitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("trellis runs purge %s = %d, stderr %q; want a usage error with %q (stdout %q)", strings.Join(tt.args, " "), code, errOut, tt.want, out)
		}
	}
	if code, out, _ := e.main("runs", "-h"); code != ExitOK || !strings.Contains(out, "\tpurge   delete finished runs") {
		t.Errorf("runs -h = %d %q, want purge listed", code, out)
	}
	if code, _, errOut := e.main("runs", "purge", "-h"); code != ExitOK || !strings.Contains(errOut, "-older-than age") {
		t.Errorf("runs purge -h = %d %q", code, errOut)
	}
}

// The terminal's answers: y or yes in any case is yes; anything else,
// or no answer at all, is no.
func TestAskOn(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"y\n", true}, {"  YES \n", true}, {"Yes", true}, {"n\n", false}, {"\n", false}, {"sure\n", false}, {"", false},
	}
	for _, tt := range tests {
		in, want := tt.in, tt.want
		var out bytes.Buffer
		got, err := askOn(strings.NewReader(in), &out)("delete 3 runs? [y/N] ")
		if err != nil || got != want || out.String() != "delete 3 runs? [y/N] " {
			t.Errorf("answer %q = %v, %v (asked %q); want %v", in, got, err, out.String(), want)
		}
	}
}

// TestRunsActByTags: retry and purge select runs by -tag as runs list
// does.
func TestRunsActByTags(t *testing.T) {
	e := newOpsEnv(t)
	e.populate() // runOpsFailed is tagged channel=web, runOpsDone channel=api
	e.golden("runs-retry-by-tag-dry-run.txt", e.ok("runs", "retry", "-tag", "channel=web", "-dry-run"))
	var dry struct {
		Action   string
		DryRun   bool
		Selected int
		Runs     []uuid.UUID
	}
	e.json(&dry, "runs", "retry", "-tag", "channel=web", "-dry-run")
	if dry.Selected != 1 || dry.Runs[0] != e.runs[runOpsFailed] {
		t.Errorf("retry -tag channel=web -dry-run = %+v, want the failed run", dry)
	}

	var res runtime.PurgeResult
	e.json(&res, "runs", "purge", "-tag", "channel=api", "-older-than", "1m", "-yes")
	if res.Runs != 1 {
		t.Errorf("purge -tag channel=api deleted %d runs, want 1", res.Runs)
	}
	if got, want := e.remaining(), []int{runChainDone, runOpsFailed, runChainQueue, runChainStop, runOpsBeta}; !cmp.Equal(got, want) {
		t.Errorf("after purging by tag, runs %v remain; want %v", got, want)
	}
	if code, _, errOut, _ := e.purge(true, "-tag", "channel"); code != ExitUsage || !strings.Contains(errOut, `-tag "channel": give key=value`) {
		t.Errorf("purge -tag channel = %d %q, want a usage error", code, errOut)
	}
}
