package cli

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store"
)

// storeRun creates a running one-task run of chain with the id given,
// straight in the store: the engine's ids are random, and a run looked up
// by a shared prefix needs ids chosen to share one.
func (e *opsEnv) storeRun(id, tenant string) uuid.UUID {
	e.t.Helper()
	res, err := e.h.Store.CreateRuns(e.t.Context(), store.CreateRuns{Now: e.h.Clock.Now(), Runs: []store.NewRun{{
		ID: uuid.MustParse(id), Workflow: "chain", Version: "chain@crafted", Tenant: tenant, Input: []byte(`{}`),
		Tasks: []store.NewTask{{Step: 0, Kind: store.KindCode, MaxAttempts: 1}},
	}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return res[0].ID
}

// uniquePrefix returns the shortest start of id (at least
// ops.MinRunIDPrefix digits) that begins no other of ids.
func uniquePrefix(id uuid.UUID, ids []uuid.UUID) string {
	s := strings.ReplaceAll(id.String(), "-", "")
	for n := ops.MinRunIDPrefix; ; n++ {
		unique := true
		for _, other := range ids {
			if other != id && strings.HasPrefix(strings.ReplaceAll(other.String(), "-", ""), s[:n]) {
				unique = false
			}
		}
		if unique || n == len(s) {
			return s[:n]
		}
	}
}

// TestRunsByIDPrefix gives runs by the start of their ids: a prefix that
// begins one run's id is that run, in every command that takes a run; one
// that begins several is a usage error listing them; one that begins none
// is not found; and text that is no run id's start is refused before
// anything is read.
func TestRunsByIDPrefix(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	failed := e.runs[runOpsFailed]
	prefix := uniquePrefix(failed, e.runs)

	// Whatever the case and dashes, the prefix shows the run as its id does.
	full := e.ok("runs", "show", failed.String())
	upper := strings.ToUpper(failed.String()[:len(prefix)+1]) // with a dash when it reaches one
	for _, ref := range []string{prefix, strings.ToUpper(prefix), strings.TrimSuffix(upper, "-")} {
		if got := e.ok("runs", "show", ref); got != full {
			t.Errorf("runs show %s:\n%s\nwant what runs show %s prints:\n%s", ref, got, failed, full)
		}
	}
	if got, want := e.ok("runs", "events", prefix), e.ok("runs", "events", failed.String()); got != want {
		t.Errorf("runs events %s differs from runs events %s", prefix, failed)
	}
	if got, want := e.ok("runs", "show", "-graph", "mermaid", prefix), e.ok("runs", "show", "-graph", "mermaid", failed.String()); got != want {
		t.Errorf("runs show -graph mermaid %s differs from the whole id's", prefix)
	}

	// Two runs whose ids begin alike, and one of its own.
	first := e.storeRun("abcd0000-0000-7000-8000-000000000001", "acme")
	second := e.storeRun("abcd0000-0000-7000-8000-000000000002", "beta")
	other := e.storeRun("abce0000-0000-7000-8000-000000000001", "acme")
	code, out, stderr := e.exec("runs", "show", "abcd0000")
	if code != ExitUsage || out != "" {
		t.Errorf("runs show abcd0000 = %d, stdout %q; want %d and nothing", code, out, ExitUsage)
	}
	e.golden("runs-show-ambiguous.txt", stderr)
	code, _, stderr = e.exec("runs", "show", "abcf0000")
	if code != ExitProblems || stderr != "trellis runs show: no run id begins with abcf0000: run not found\n" {
		t.Errorf("runs show abcf0000 = %d, %q", code, stderr)
	}

	// cancel and retry act on none of the runs when one of them is not
	// named by its prefix.
	code, out, stderr = e.exec("runs", "cancel", "abce0000", "abcd0000", "abcf0000")
	if code != ExitUsage || out != "" || !strings.Contains(stderr, `2 runs have ids that begin with "abcd0000"`) || !strings.Contains(stderr, "no run id begins with abcf0000") {
		t.Errorf("runs cancel abce0000 abcd0000 abcf0000 = %d, stdout %q, stderr:\n%s", code, out, stderr)
	}
	for _, id := range []uuid.UUID{first, second, other} {
		if r, err := e.h.Store.GetRun(t.Context(), id); err != nil || r.Status != runtime.RunRunning {
			t.Errorf("run %s is %s (%v) after a refused cancel, want RUNNING", id, r.Status, err)
		}
	}
	if out := e.ok("runs", "cancel", "ABCE0000", "abcd0000-0000-7000-8000-000000000002"); out != other.String()+"  cancelled\n"+second.String()+"  cancelled\n" {
		t.Errorf("runs cancel ABCE0000 abcd...2:\n%s", out)
	}

	// -parent and events send -run take a prefix too.
	if out := e.ok("runs", "list", "-parent", "abce0000"); out != "no runs\n" {
		t.Errorf("runs list -parent abce0000:\n%s", out)
	}
	if code, _, stderr := e.exec("runs", "list", "-parent", "abcd0000"); code != ExitUsage || !strings.Contains(stderr, "give more of the id") {
		t.Errorf("runs list -parent abcd0000 = %d, %s", code, stderr)
	}
	if code, _, stderr := e.exec("events", "send", "-run", "abcf0000", "chain", "nudge", "{}"); code != ExitProblems || !strings.Contains(stderr, "no run id begins with abcf0000") {
		t.Errorf("events send -run abcf0000 = %d, %s", code, stderr)
	}

	// Text that is no run id's start is a usage error, read nowhere, and
	// the message does not repeat a long argument.
	for _, ref := range []string{"abcd000", "%", "_", "ab_d", "abcd%", "run-7", "0190-a0b4", strings.Repeat("a", 10_000), "abcd\x1b[31m"} {
		code, out, stderr := e.exec("runs", "show", ref)
		if code != ExitUsage || out != "" || !strings.Contains(stderr, "is not a run id or the start of one") || len(stderr) > 400 || strings.Contains(stderr, "\x1b") {
			t.Errorf("runs show %.20q = %d, stdout %q, stderr %q", ref, code, out, stderr)
		}
	}
}
