package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// hostile holds what a terminal acts on: it clears the screen, writes the
// clipboard (OSC 52), starts a red CSI in its one-byte C1 form, returns
// the carriage, reverses what follows (bidi override), opens an isolate
// and breaks the line with U+2028.
const hostile = "\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\u009b31m\rOK \u202edetrevni\u2066\u2028end"

// hostileSteps are the ops workflow's steps, with the hostile text in the
// output of prepare and in the error of work (with a byte that is not
// UTF-8, and a second line).
type hostileSteps struct{ opsSteps }

func (hostileSteps) Prepare(context.Context, wf.OpsInput) (wf.OpsPrepareOutput, error) {
	return wf.OpsPrepareOutput{Token: "tok " + hostile}, nil
}

func (hostileSteps) Work(context.Context, wf.OpsInput, wf.OpsWorkParents) (wf.OpsWorkOutput, error) {
	return wf.OpsWorkOutput{}, runtime.NonRetryable(errors.New("gateway: " + hostile + " \xff\n\tsecond line"))
}

// TestUntrustedTextIsEscaped makes a run whose input, tenant, idempotency
// key, step output and step error hold escape sequences, C1 controls, bidi
// overrides and bytes that are not UTF-8, a worker and a schedule with such
// names, and checks that no listing or show prints any of them raw, in
// text or in JSON, through Main and through each command's Run: they are
// shown escaped, and the JSON still decodes to the stored values.
func TestUntrustedTextIsEscaped(t *testing.T) {
	e := newOpsEnvWith(t, hostileSteps{})
	ctx, h := t.Context(), e.h
	tenant, key, label := "acme "+hostile, "order "+hostile, "label "+hostile
	ref, err := e.ops.RunNoWait(ctx, wf.OpsInput{Mode: wf.OpsInputModeFail, Label: &label},
		runtime.WithTenant(tenant), runtime.WithIdempotencyKey(key))
	if err != nil {
		t.Fatal(err)
	}
	failed := e.created(ref.ID).String()
	h.Settle()
	queued, err := e.ops.RunNoWait(ctx, wf.OpsInput{Mode: wf.OpsInputModeOk}, runtime.WithTenant(tenant))
	if err != nil {
		t.Fatal(err)
	}
	e.created(queued.ID)
	if _, err := h.Store.Heartbeat(ctx, "worker "+hostile, h.Now()); err != nil {
		t.Fatal(err)
	}
	reports, err := wf.RegisterReports(h.Engine, reportBuilder{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reports.CreateSchedule(ctx, "ten", "*/10 * * * *", wf.ReportsInput{Kind: wf.ReportsInputKindDigest}, runtime.WithScheduleTenant(tenant)); err != nil {
		t.Fatal(err)
	}

	commands := [][]string{
		{"runs", "list"},
		{"runs", "list", "-tenant", tenant},
		{"runs", "show", failed},
		{"runs", "show", "-graph", "mermaid", failed},
		{"runs", "show", "-graph", "dot", failed},
		{"runs", "events", failed},
		{"runs", "retry", "-status", "FAILED", "-dry-run"},
		{"workers"},
		{"queue"},
		{"workflows"},
		{"schedules"},
		{"runs", "cancel", queued.ID.String(), failed}, // last: it ends the queued run
	}
	for _, args := range commands {
		for _, format := range []string{"text", "json"} {
			if format == "json" && slices.Contains(args, "-graph") {
				continue // -graph draws; it has no JSON
			}
			full := append(append([]string{}, args...), "-format", format)
			_, runOut, runErr := e.exec(full...)
			_, mainOut, mainErr := e.main(append(full, "-database-url", e.url)...)
			// In colour, the CLI's own escapes are the only ones.
			_, colourOut, colourErr := e.main(append(full, "-database-url", e.url, "-color", "always")...)
			colourOut, colourErr = ourEscapes.ReplaceAllString(colourOut, ""), ourEscapes.ReplaceAllString(colourErr, "")
			for what, out := range map[string]string{"Run's stdout": runOut, "Run's stderr": runErr, "Main's stdout": mainOut, "Main's stderr": mainErr,
				"Main's stdout in colour": colourOut, "Main's stderr in colour": colourErr} {
				if bad := unescaped(out); bad != "" {
					t.Errorf("trellis %q: %s holds %s:\n%q", full, what, bad, out)
				}
			}
		}
	}

	// The text shows what was stored, escaped.
	show := e.ok("runs", "show", failed)
	for _, want := range []string{
		`Tenant:           acme \x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\u009b31m\rOK \u202edetrevni\u2066\u2028end`,
		`Idempotency key:  order \x1b[2J`,
		`Failure:          step work: gateway: \x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\u009b31m\rOK \u202edetrevni\u2066\u2028end ` + "\uFFFD" + `\n\tsecond line`,
		`"label": "label \u001b[2J\u001b]52;c;cm0gLXJmIH4=\u0007\u009b31m\rOK \u202edetrevni\u2066\u2028end"`,
		`"token": "tok \u001b[2J`,
	} {
		if !strings.Contains(show, want) {
			t.Errorf("runs show lacks %s:\n%q", want, show)
		}
	}
	// The JSON, escaped, still decodes to the values stored.
	var run ops.RunDetail
	e.json(&run, "runs", "show", failed)
	var input struct{ Label string }
	if err := json.Unmarshal(run.Input, &input); err != nil {
		t.Fatal(err)
	}
	wantError := "gateway: " + hostile + " \uFFFD\n\tsecond line" // stored as valid UTF-8
	if run.Tenant != tenant || run.IdempotencyKey != key || input.Label != label || run.Failure == nil || run.Failure.Error != wantError {
		t.Errorf("runs show -format json decodes to tenant %q, key %q, label %q, failure %+v; want %q, %q, %q and error %q",
			run.Tenant, run.IdempotencyKey, input.Label, run.Failure, tenant, key, label, wantError)
	}
}

// ourEscapes are the escapes the CLI writes in colour: SGR with the
// parameters of its styles.
var ourEscapes = regexp.MustCompile("\x1b\\[(?:0|1|2|32|33|36|1;31)m")

// unescaped names the first character of out a terminal would act on, or
// says it is not UTF-8; "" when out is safe to print.
func unescaped(out string) string {
	if !utf8.ValidString(out) {
		return "bytes that are not UTF-8"
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
			r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) {
			return fmt.Sprintf("%U", r)
		}
	}
	return ""
}

// TestLintEscapesTheFile checks that the problems lint reports, which
// quote the workflow file (here in an error of CEL's) and name it, print
// none of their control characters raw, in each format.
func TestLintEscapesTheFile(t *testing.T) {
	dir := workspace(t, map[string]string{"flows/evil\x1b[2J\u202e.yaml": "name: x\ninput: {type: object, properties: {a: {type: string}}}\nsteps:\n" +
		"  - name: a\n    skipIf: [\"input.a == 1 \\e[31m\\u009b\"]\n"}) // YAML's escapes: the file holds no control character

	for _, format := range []string{"text", "json", "github", "text -color always"} {
		code, out, errOut := run(t, dir, append([]string{"lint", "-format"}, append(strings.Fields(format), "flows")...)...)
		out, errOut = ourEscapes.ReplaceAllString(out, ""), ourEscapes.ReplaceAllString(errOut, "")
		if code != ExitProblems || !strings.Contains(out, "token recognition error") || !strings.Contains(out, `[2J\u202e.yaml`) {
			t.Errorf("lint -format %s exited %d, stdout %q, stderr %q; want the problems, escaped", format, code, out, errOut)
		}
		for what, s := range map[string]string{"stdout": out, "stderr": errOut} {
			if bad := unescaped(s); bad != "" {
				t.Errorf("lint -format %s: %s holds %s:\n%q", format, what, bad, s)
			}
		}
	}
}
