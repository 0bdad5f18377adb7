package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

type reportBuilder struct{}

func (reportBuilder) Build(context.Context, wf.ReportsInput) error { return nil }

// scheduleEnv is an ops env with the reports workflow (whose file declares
// the schedules hourly and morning) and two schedules created at run
// time: ten, every ten minutes for tenant ops, and weekly, paused.
func scheduleEnv(t *testing.T) *opsEnv {
	e := newOpsEnv(t)
	reports, err := wf.RegisterReports(e.h.Engine, reportBuilder{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := reports.CreateSchedule(ctx, "ten", "*/10 * * * *", wf.ReportsInput{Kind: wf.ReportsInputKindDigest}, runtime.WithScheduleTenant("ops")); err != nil {
		t.Fatal(err)
	}
	e.h.Clock.Set(e.h.Now().Add(time.Minute))
	if _, err := reports.CreateSchedule(ctx, "weekly", "0 9 * * 1", wf.ReportsInput{Kind: wf.ReportsInputKindHourly}, runtime.WithTimezone("Asia/Kolkata")); err != nil {
		t.Fatal(err)
	}
	e.h.Clock.Set(e.h.Now().Add(time.Minute))
	if _, err := reports.PauseSchedule(ctx, "weekly"); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestSchedulesCommand(t *testing.T) {
	e := scheduleEnv(t)
	e.golden("schedules.txt", e.ok("schedules"))
	e.golden("workflows-schedules.txt", e.ok("workflows"))

	var listed []runtime.Schedule
	e.json(&listed, "schedules", "list", "-workflow", "reports")
	var got []string
	for _, s := range listed {
		var input bytes.Buffer
		if err := json.Compact(&input, s.Input); err != nil {
			t.Fatal(err)
		}
		got = append(got, s.Name+" "+s.Source+" "+s.Tenant+" "+input.String())
	}
	want := []string{
		`hourly file default {"kind":"hourly"}`,
		`morning file newsroom {"kind":"digest"}`,
		`ten api ops {"kind":"digest"}`,
		`weekly api default {"kind":"hourly"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schedules list -format json (-want +got):\n%s", diff)
	}
	if out := e.ok("schedules", "list", "-workflow", "chain"); out != "no schedules\n" {
		t.Errorf("schedules of chain = %q", out)
	}

	if out := e.ok("schedules", "resume", "reports", "weekly"); out != "resumed schedule weekly of reports\n" {
		t.Errorf("resume = %q", out)
	}
	if out := e.ok("schedules", "delete", "reports", "ten"); out != "deleted schedule ten of reports\n" {
		t.Errorf("delete = %q", out)
	}
	e.golden("schedules-after.txt", e.ok("schedules"))

	// Unknown schedules, and those of the file, are refused with a hint.
	for _, tt := range []struct{ name, hint string }{
		{"ten", "trellis schedules list shows them"},
		{"hourly", "it is declared in the workflow file"},
	} {
		code, _, stderr := e.exec("schedules", "delete", "reports", tt.name)
		if code != ExitProblems || !strings.Contains(stderr, "schedule not found") || !strings.Contains(stderr, tt.hint) {
			t.Errorf("delete %s: exit %d, stderr %q; want 1 and a hint %q", tt.name, code, stderr, tt.hint)
		}
	}
	if code, _, stderr := e.exec("schedules", "delete", "reports"); code != ExitUsage || !strings.Contains(stderr, "WORKFLOW NAME") {
		t.Errorf("delete without a name: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := e.exec("schedules", "stop"); code != ExitUsage || !strings.Contains(stderr, `unknown subcommand "stop"`) {
		t.Errorf("schedules stop: exit %d, stderr %q", code, stderr)
	}
}
