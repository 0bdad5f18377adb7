package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ops")

// opsEnv is a Postgres schema holding runs made by a real engine, on a
// virtual clock that starts at 2030-01-01T00:00:00Z, and the commands to
// inspect them with the same clock.
type opsEnv struct {
	t     *testing.T
	url   string
	h     *trellistest.Harness
	chain *wf.ChainClient
	ops   *wf.OpsClient
	// runs in the order they were created, for normalising output.
	runs []uuid.UUID
}

func newOpsEnv(t *testing.T) *opsEnv {
	t.Helper()
	return newOpsEnvWith(t, opsSteps{})
}

// newOpsEnvWith is newOpsEnv with other code for the ops workflow's steps.
func newOpsEnvWith(t *testing.T, steps wf.OpsSteps) *opsEnv {
	t.Helper()
	pool, schema := pgtest.PoolWithSchema(t)
	e := &opsEnv{t: t, url: pgstore.WithSearchPath(pgtest.URL(), schema)}
	e.h = trellistest.New(t, trellistest.WithStore(pgstore.New(pool)))
	var err error
	if e.chain, err = wf.RegisterChain(e.h.Engine, chainSteps{}); err != nil {
		t.Fatal(err)
	}
	if e.ops, err = wf.RegisterOps(e.h.Engine, steps); err != nil {
		t.Fatal(err)
	}
	return e
}

// exec runs a command line against the env's schema, with the env's clock.
func (e *opsEnv) exec(args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	args = append(args, "-database-url", e.url)
	var cmd Command
	switch args[0] {
	case "runs":
		cmd = RunsCommand{Clock: e.h.Clock}
	case "workers":
		cmd = WorkersCommand{Clock: e.h.Clock}
	case "queue":
		cmd = QueueCommand{Clock: e.h.Clock}
	case "schedules":
		cmd = SchedulesCommand{Clock: e.h.Clock}
	case "workflows":
		cmd = WorkflowsCommand{Clock: e.h.Clock}
	case "events":
		cmd = EventsCommand{Clock: e.h.Clock}
	default:
		return e.main(args...)
	}
	var out, errOut bytes.Buffer
	code = cmd.Run(e.t.Context(), args[1:], &out, &errOut)
	return code, out.String(), errOut.String()
}

func (e *opsEnv) main(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Main(e.t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// ok runs a command line that must succeed and returns its output.
func (e *opsEnv) ok(args ...string) string {
	e.t.Helper()
	code, out, errOut := e.exec(args...)
	if code != ExitOK {
		e.t.Fatalf("trellis %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// json runs a command line with -format json and decodes its output.
func (e *opsEnv) json(v any, args ...string) {
	e.t.Helper()
	out := e.ok(append(args, "-format", "json")...)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		e.t.Fatalf("decoding the JSON of trellis %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// created records a run the env made.
func (e *opsEnv) created(id uuid.UUID) uuid.UUID {
	e.runs = append(e.runs, id)
	return id
}

var cursorText = regexp.MustCompile(`-after [A-Za-z0-9_-]+`)

// normalise replaces run ids with stand-ins of the same length that
// number the runs in creation order, and cursors with <cursor>.
func (e *opsEnv) normalise(s string) string {
	for i, id := range e.runs {
		s = strings.ReplaceAll(s, id.String(), fmt.Sprintf("00000000-0000-7000-8000-%012d", i+1))
	}
	return cursorText.ReplaceAllString(s, "-after <cursor>")
}

// golden compares output with testdata/ops/name, or rewrites it with
// -update.
func (e *opsEnv) golden(name, got string) {
	e.t.Helper()
	got = e.normalise(got)
	path := filepath.Join("testdata", "ops", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		e.t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

type chainSteps struct{}

func (chainSteps) First(_ context.Context, in wf.ChainInput) (wf.ChainFirstOutput, error) {
	return wf.ChainFirstOutput{Value: in.Start + 1}, nil
}

func (chainSteps) Second(_ context.Context, _ wf.ChainInput, p wf.ChainSecondParents) (wf.ChainSecondOutput, error) {
	return wf.ChainSecondOutput{Value: p.First.Value + 1}, nil
}

func (chainSteps) Third(_ context.Context, _ wf.ChainInput, p wf.ChainThirdParents) (wf.ChainThirdOutput, error) {
	return wf.ChainThirdOutput{Value: p.Second.Value + 1}, nil
}

// opsSteps fails work on every attempt in mode fail.
type opsSteps struct{}

func (opsSteps) Prepare(context.Context, wf.OpsInput) (wf.OpsPrepareOutput, error) {
	return wf.OpsPrepareOutput{Token: "tok-1"}, nil
}

func (opsSteps) Work(ctx context.Context, in wf.OpsInput, _ wf.OpsWorkParents) (wf.OpsWorkOutput, error) {
	info, _ := runtime.InfoFromContext(ctx)
	if in.Mode == wf.OpsInputModeFail {
		return wf.OpsWorkOutput{}, fmt.Errorf("payment gateway said no (attempt %d)", info.Attempt)
	}
	return wf.OpsWorkOutput{Attempt: int64(info.Attempt)}, nil
}

func (opsSteps) Sidecar(context.Context, wf.OpsInput, wf.OpsSidecarParents) error { return nil }
func (opsSteps) Report(context.Context, wf.OpsInput, wf.OpsReportParents) error   { return nil }
func (opsSteps) Audit(context.Context, wf.OpsInput, wf.OpsAuditParents) error     { return nil }
func (opsSteps) Alert(context.Context, wf.OpsInput, runtime.Failure) error        { return nil }

// The runs every test below starts from, in creation order.
const (
	runChainDone  = iota // chain, completed at 00:00
	runOpsFailed         // ops, tenant acme, key order-7, failed after two retries
	runOpsDone           // ops, tenant acme, completed
	runChainQueue        // chain, running: its first step queued
	runChainStop         // chain, cancelled
	runOpsBeta           // ops, tenant beta, running: prepare queued
)

// populate makes the six runs, a minute apart or more, and leaves the
// clock at 00:10.
func (e *opsEnv) populate() {
	t, ctx, h := e.t, e.t.Context(), e.h
	label := "checkout"
	res, err := e.chain.Run(ctx, wf.ChainInput{Start: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.created(res.ID)
	h.Clock.Advance(time.Minute)
	ref, err := e.ops.RunNoWait(ctx, wf.OpsInput{Mode: wf.OpsInputModeFail, Label: &label},
		runtime.WithTenant("acme"), runtime.WithIdempotencyKey("order-7"), runtime.WithTags(map[string]string{"channel": "web", "customer": "acme corp"}))
	if err != nil {
		t.Fatal(err)
	}
	e.created(ref.ID)
	h.Settle() // two retries, 30s and 90s apart; then the failure handler
	h.Clock.Advance(time.Minute)
	done, err := e.ops.Run(ctx, wf.OpsInput{Mode: wf.OpsInputModeOk}, runtime.WithTenant("acme"), runtime.WithTag("channel", "api"))
	if err != nil {
		t.Fatal(err)
	}
	e.created(done.ID)
	h.Clock.Advance(time.Minute)
	ref, err = e.chain.RunNoWait(ctx, wf.ChainInput{Start: 10})
	if err != nil {
		t.Fatal(err)
	}
	e.created(ref.ID)
	h.Clock.Advance(time.Minute)
	ref, err = e.chain.RunNoWait(ctx, wf.ChainInput{Start: 20})
	if err != nil {
		t.Fatal(err)
	}
	e.created(ref.ID)
	if ok, err := h.Engine.CancelRun(ctx, ref.ID); err != nil || !ok {
		t.Fatalf("CancelRun = %v, %v", ok, err)
	}
	h.Clock.Advance(time.Minute)
	ref, err = e.ops.RunNoWait(ctx, wf.OpsInput{Mode: wf.OpsInputModeOk}, runtime.WithTenant("beta"))
	if err != nil {
		t.Fatal(err)
	}
	e.created(ref.ID)
	h.Clock.Set(h.Start.Add(10 * time.Minute))
}

func TestRunsListShowEvents(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	failed := e.runs[runOpsFailed].String()

	e.golden("runs-list.txt", e.ok("runs", "list"))
	e.golden("runs-show-failed.txt", e.ok("runs", "show", failed))
	e.golden("runs-show-running.txt", e.ok("runs", "show", e.runs[runChainQueue].String()))
	// A chain's log, whose order is fixed: in the failed run's, work and
	// sidecar run at once (its events are checked below, step by step).
	e.golden("runs-events-chain.txt", e.ok("runs", "events", e.runs[runChainDone].String()))
	e.golden("runs-show-graph.mmd.txt", e.ok("runs", "show", "-graph", "mermaid", failed))
	e.golden("runs-show-graph.dot.txt", e.ok("runs", "show", failed, "-graph", "dot"))

	var page ops.RunPage
	e.json(&page, "runs", "list")
	want := slices.Clone(e.runs)
	slices.Reverse(want)
	if diff := cmp.Diff(want, runIDs(page.Runs)); diff != "" {
		t.Errorf("runs list -format json: ids (-want +got):\n%s", diff)
	}
	if page.Next != "" {
		t.Errorf("next = %q on the only page", page.Next)
	}
	got := page.Runs[len(page.Runs)-1-runOpsFailed]
	at := func(d time.Duration) *time.Time { t := e.h.Start.Add(d); return &t }
	wantRun := ops.Run{
		ID: e.runs[runOpsFailed], Workflow: "ops", Version: got.Version, Tenant: "acme", IdempotencyKey: "order-7", Priority: runtime.PriorityNormal,
		Status: runtime.RunFailed, CreatedAt: *at(time.Minute), FinishedAt: *at(3 * time.Minute),
		Failure: &runtime.Failure{StepIndex: 0, Step: "work", Error: "payment gateway said no (attempt 3)"},
		Tags:    map[string]string{"channel": "web", "customer": "acme corp"},
	}
	if diff := cmp.Diff(wantRun, got); diff != "" || !strings.HasPrefix(got.Version, "ops@") {
		t.Errorf("the failed run as listed (-want +got):\n%s", diff)
	}

	var run ops.RunDetail
	e.json(&run, "runs", "show", failed)
	if diff := cmp.Diff(wantRun, run.Run); diff != "" {
		t.Errorf("runs show -format json: the run (-want +got):\n%s", diff)
	}
	if got := compact(t, run.Input); got != `{"mode":"fail","label":"checkout"}` {
		t.Errorf("input = %s", got)
	}
	type step struct {
		Name     string
		Status   runtime.TaskStatus
		Attempts int
		Took     time.Duration
		Output   string
	}
	var steps []step
	for _, s := range run.Steps {
		d, _ := s.Duration()
		steps = append(steps, step{s.Name, s.Status, s.Attempts, d, compact(t, s.Output)})
	}
	wantSteps := []step{
		{"prepare", runtime.TaskCompleted, 1, 0, `{"token":"tok-1"}`},
		{"work", runtime.TaskFailed, 3, 0, ""},
		{"sidecar", runtime.TaskCompleted, 1, 0, ""},
		{"report", runtime.TaskCancelled, 0, 0, ""},
		{"audit", runtime.TaskCancelled, 0, 0, ""},
		{"alert", runtime.TaskCompleted, 1, 0, ""},
	}
	if diff := cmp.Diff(wantSteps, steps); diff != "" {
		t.Errorf("runs show -format json: steps (-want +got):\n%s", diff)
	}
	if w := run.Steps[1]; w.Error != "payment gateway said no (attempt 3)" || !w.StartedAt.Equal(*at(3 * time.Minute)) {
		t.Errorf("work = %+v, want its last attempt's error and start", w)
	}

	var events []runtime.Event
	e.json(&events, "runs", "events", failed)
	var trail []string
	var wakes []time.Time
	for _, ev := range events {
		if ev.Step == "work" {
			trail = append(trail, string(ev.Type))
		}
		if !ev.WakeAt.IsZero() {
			wakes = append(wakes, ev.WakeAt)
		}
	}
	// Retried 30s, then 90s, after attempts at 00:01:00 and 00:01:30.
	if want := []time.Time{*at(time.Minute + 30*time.Second), *at(3 * time.Minute)}; !cmp.Equal(want, wakes) {
		t.Errorf("the RETRYING events' wakeAt = %v, want %v", wakes, want)
	}
	wantTrail := []string{"QUEUED", "STARTED", "RETRYING", "QUEUED", "STARTED", "RETRYING", "QUEUED", "STARTED", "FAILED"}
	if diff := cmp.Diff(wantTrail, trail); diff != "" {
		t.Errorf("events of work (-want +got):\n%s", diff)
	}
}

// compact removes the indentation -format json gives embedded documents.
func compact(t *testing.T, doc json.RawMessage) string {
	t.Helper()
	if len(doc) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func runIDs(runs []ops.Run) []uuid.UUID {
	out := make([]uuid.UUID, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

func TestRunsListFilters(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	tests := []struct {
		flags []string
		want  []int
	}{
		{[]string{"-status", "failed,CANCELLED"}, []int{runChainStop, runOpsFailed}},
		{[]string{"-status", "RUNNING"}, []int{runOpsBeta, runChainQueue}},
		{[]string{"-workflow", "chain"}, []int{runChainStop, runChainQueue, runChainDone}},
		{[]string{"-tenant", "acme"}, []int{runOpsDone, runOpsFailed}},
		{[]string{"-idempotency-key", "order-7"}, []int{runOpsFailed}},
		{[]string{"-since", "2030-01-01T00:04:00Z"}, []int{runOpsBeta, runChainStop, runChainQueue, runOpsDone}},
		{[]string{"-since", "5m30s"}, []int{runOpsBeta, runChainStop, runChainQueue}}, // the clock reads 00:10
		{[]string{"-until", "2030-01-01T00:04:00Z"}, []int{runOpsFailed, runChainDone}},
		{[]string{"-since", "2030-01-01", "-until", "2030-01-01T00:01:00Z"}, []int{runChainDone}},
		{[]string{"-finished-since", "1h"}, []int{runChainStop, runOpsDone, runOpsFailed, runChainDone}}, // the ended runs
		{[]string{"-finished-since", "1h", "-status", "FAILED"}, []int{runOpsFailed}},
		{[]string{"-workflow", "ops", "-tenant", "acme", "-status", "completed"}, []int{runOpsDone}},
		{[]string{"-workflow", "nope"}, nil},
		{[]string{"-tag", "channel=web"}, []int{runOpsFailed}},
		{[]string{"-tag", "customer=acme corp", "-tag", "channel=web"}, []int{runOpsFailed}},
		{[]string{"-tag", "customer=acme corp", "-tag", "channel=api"}, nil},
		{[]string{"-tag", "channel=api", "-status", "completed"}, []int{runOpsDone}},
		{[]string{"-workflow", "ops", "-where", `"channel" in tags && tags.customer != "acme corp"`}, []int{runOpsDone}},
	}
	for _, tt := range tests {
		var page ops.RunPage
		e.json(&page, append([]string{"runs", "list"}, tt.flags...)...)
		want := []uuid.UUID{}
		for _, i := range tt.want {
			want = append(want, e.runs[i])
		}
		if diff := cmp.Diff(want, runIDs(page.Runs)); diff != "" {
			t.Errorf("runs list %s (-want +got):\n%s", strings.Join(tt.flags, " "), e.normalise(diff))
		}
	}
	if out := e.ok("runs", "list", "-workflow", "nope"); out != "no runs\n" {
		t.Errorf("an empty listing prints %q", out)
	}
}

// TestRunsListPages walks a listing with -after: every run exactly once,
// newest first, when pages end among runs created at the same instant.
func TestRunsListPages(t *testing.T) {
	e := newOpsEnv(t)
	ctx := e.t.Context()
	var want []uuid.UUID
	for _, n := range []int{1, 11, 1, 6} {
		inputs := make([]wf.ChainInput, n)
		refs, err := e.chain.RunManyNoWait(ctx, inputs) // one instant for all
		if err != nil {
			t.Fatal(err)
		}
		var batch []uuid.UUID
		for _, r := range refs {
			batch = append(batch, e.created(r.ID))
		}
		slices.SortFunc(batch, func(a, b uuid.UUID) int { return bytes.Compare(b[:], a[:]) })
		want = append(batch, want...)
		e.h.Clock.Advance(time.Second)
	}
	var got []uuid.UUID
	after := ""
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatal("the listing does not end")
		}
		args := []string{"runs", "list", "-limit", "4"}
		if after != "" {
			args = append(args, "-after", after)
		}
		var page ops.RunPage
		e.json(&page, args...)
		if len(page.Runs) > 4 {
			t.Fatalf("page of %d runs, limit 4", len(page.Runs))
		}
		got = append(got, runIDs(page.Runs)...)
		text := e.ok(args...)
		if hasNext := strings.Contains(text, "next page: -after "+page.Next+"\n"); hasNext != (page.Next != "") {
			t.Errorf("text output and JSON disagree on the next page (%q):\n%s", page.Next, text)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("walking the pages (-want +got):\n%s", e.normalise(diff))
	}
}

func TestRunsCancelRetry(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	running, failed, done := e.runs[runChainQueue].String(), e.runs[runOpsFailed].String(), e.runs[runChainDone].String()
	beta := e.runs[runOpsBeta].String()
	unknown := uuid.Must(uuid.NewV7())
	e.runs = append(e.runs, unknown)

	code, out, errOut := e.exec("runs", "cancel", running, done, unknown.String())
	if code != ExitProblems {
		t.Errorf("cancel with an unknown run exited %d, want %d; stderr %q", code, ExitProblems, errOut)
	}
	e.golden("runs-cancel.txt", out)
	code, out, _ = e.exec("runs", "retry", failed, beta, done)
	if code != ExitOK {
		t.Errorf("retry exited %d", code)
	}
	e.golden("runs-retry.txt", out)
	status := func(id string) runtime.RunStatus {
		r, err := e.h.Engine.Result(e.t.Context(), uuid.MustParse(id))
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	if status(running) != runtime.RunCancelled || status(failed) != runtime.RunRunning || status(done) != runtime.RunCompleted {
		t.Errorf("after cancel and retry: %s %s %s, want CANCELLED RUNNING COMPLETED", status(running), status(failed), status(done))
	}
	var results []ops.ActionResult
	e.json(&results, "runs", "cancel", failed, running)
	want := []ops.ActionResult{
		{Run: uuid.MustParse(failed), Outcome: ops.Cancelled},
		{Run: uuid.MustParse(running), Outcome: ops.AlreadyEnded, Status: runtime.RunCancelled},
	}
	if diff := cmp.Diff(want, results); diff != "" {
		t.Errorf("cancel -format json (-want +got):\n%s", diff)
	}
}

func TestRunsErrors(t *testing.T) {
	e := newOpsEnv(t)
	unknown := uuid.Must(uuid.NewV7()).String()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"runs", "show", unknown}, ExitProblems, "run " + unknown + ": run not found"},
		{[]string{"runs", "events", unknown}, ExitProblems, "run " + unknown + ": run not found"},
		{[]string{"runs", "show", "run-7"}, ExitUsage, `"run-7" is not a run id`},
		{[]string{"runs", "show"}, ExitUsage, "give one run id"},
		{[]string{"runs", "cancel"}, ExitUsage, "give the ids of the runs"},
		{[]string{"runs", "list", "-status", "failed,stuck"}, ExitUsage, `unknown run status "STUCK"`},
		{[]string{"runs", "list", "-limit", "0"}, ExitUsage, "-limit 0: use 1 to 1000"},
		{[]string{"runs", "list", "-since", "yesterday"}, ExitUsage, `-since "yesterday": give an RFC 3339 time`},
		{[]string{"runs", "list", "-finished-since", "soon"}, ExitUsage, `-finished-since "soon": give an RFC 3339 time`},
		{[]string{"runs", "list", "-since", "1h", "-until", "2h"}, ExitUsage, "the time range is empty"},
		{[]string{"runs", "list", "-after", "bogus"}, ExitUsage, `invalid cursor "bogus"`},
		{[]string{"runs", "list", "-format", "yaml"}, ExitUsage, `unknown format "yaml"`},
		{[]string{"runs", "list", "chain"}, ExitUsage, `unexpected argument "chain"`},
		{[]string{"runs", "list", "-tag", "channel"}, ExitUsage, `-tag "channel": give key=value`},
		{[]string{"runs", "list", "-tag", "a=1", "-tag", "a=2"}, ExitUsage, `tag a is given twice`},
		{[]string{"runs", "list", "-tag", "Channel=web"}, ExitUsage, `tag key "Channel" has "C" at byte 0`},
		{[]string{"runs", "cancel", "-tag", "channel=web", unknown}, ExitUsage, "not both"},
		{[]string{"runs", "frobnicate"}, ExitUsage, `unknown subcommand "frobnicate"`},
		{[]string{"workers", "-stale-after", "1s"}, ExitUsage, "-stale-after 1s"},
		{[]string{"runs", "list", "-where", "input.start > 1"}, ExitUsage, "-where needs -workflow"},
		{[]string{"runs", "list", "-workflow", "chain", "-where", "input.start > 1"}, ExitProblems, `no version of workflow "chain" is stored`},
		{[]string{"runs", "cancel", "-workflow", "chain", unknown}, ExitUsage, "not both"},
		{[]string{"runs", "cancel", "-status", "failed"}, ExitUsage, "-status FAILED: cancel acts on runs that are RUNNING"},
		{[]string{"runs", "retry", "-status", "running,completed"}, ExitUsage, "retry acts on runs that are FAILED or CANCELLED"},
		{[]string{"runs", "retry", "-dry-run", unknown}, ExitUsage, "-dry-run and -yes go with filters"},
		{[]string{"runs", "show", "-graph", "png", unknown}, ExitUsage, `unknown graph format "png": use mermaid or dot`},
		{[]string{"runs", "show", "-graph", "dot", "-format", "json", unknown}, ExitUsage, "does not go with -format json"},
		{[]string{"runs", "show", "-graph", "dot", unknown}, ExitProblems, "run " + unknown + ": run not found"},
	}
	for _, tt := range tests {
		code, out, errOut := e.exec(tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("trellis %s = %d, stderr %q; want %d and %q (stdout %q)", strings.Join(tt.args, " "), code, errOut, tt.code, tt.want, out)
		}
	}
	code, _, errOut := e.main("runs", "list", "-database-url", "")
	if code != ExitUsage || !strings.Contains(errOut, "no database: pass -database-url or set TRELLIS_DATABASE_URL") {
		t.Errorf("runs list without a database = %d %q", code, errOut)
	}
	if code, out, _ := e.main("runs", "-h"); code != ExitOK || !strings.Contains(out, "retry failed or cancelled runs") {
		t.Errorf("runs -h = %d %q", code, out)
	}
}

func TestWorkersQueueWorkflows(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	ctx, s, now := e.t.Context(), e.h.Store, e.h.Now()
	// worker-a runs the queued chain run's first step and leads; worker-b
	// fell silent two minutes ago.
	if _, err := s.Heartbeat(ctx, "worker-b", now.Add(-2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Heartbeat(ctx, "worker-a", now.Add(-2*time.Second)); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimTasks(ctx, store.Claim{Worker: "worker-a", Versions: []string{e.chain.Workflow().Definition().Version()}, Limit: 10, Now: now.Add(-time.Second)})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claimed %v, %v; want the queued chain run's first step", claimed, err)
	}
	leader := s.Leadership("worker-a")
	t.Cleanup(func() { _ = leader.Resign(context.WithoutCancel(ctx)) })
	if ok, err := leader.TryLead(ctx); err != nil || !ok {
		t.Fatalf("TryLead = %v, %v", ok, err)
	}

	e.golden("workers.txt", e.ok("workers"))
	e.golden("queue.txt", e.ok("queue"))
	e.golden("workflows.txt", e.ok("workflows"))

	var workers []ops.Worker
	e.json(&workers, "workers")
	wantWorkers := []ops.Worker{
		{ID: "worker-a", HeartbeatAt: now.Add(-2 * time.Second), Alive: true, Leases: 1, Leader: true},
		{ID: "worker-b", HeartbeatAt: now.Add(-2 * time.Minute)},
	}
	if diff := cmp.Diff(wantWorkers, workers); diff != "" {
		t.Errorf("workers -format json (-want +got):\n%s", diff)
	}
	e.json(&workers, "workers", "-stale-after", "5m")
	if !workers[1].Alive {
		t.Errorf("worker-b, quiet for 2m, is silent with -stale-after 5m")
	}

	var queue []ops.QueueGroup
	e.json(&queue, "queue")
	queuedAt := e.h.Start.Add(7 * time.Minute)
	wantQueue := []ops.QueueGroup{
		{Tenant: "beta", Workflow: "ops", Queued: 1, OldestQueuedAt: queuedAt},
		{Tenant: "default", Workflow: "chain", Running: 1},
	}
	if diff := cmp.Diff(wantQueue, queue); diff != "" {
		t.Errorf("queue -format json (-want +got):\n%s", diff)
	}

	// No worker announced the ops workflow's version: its queued task is
	// unserved (waiting: queued 3m ago, less than StuckAfter). worker-a
	// announcing the version serves it.
	e.golden("queue-unserved.txt", e.ok("queue", "-unserved"))
	var unserved []runtime.UnservedWork
	e.json(&unserved, "queue", "-unserved")
	opsVersion := e.ops.Workflow().Definition().Version()
	if len(unserved) != 1 || unserved[0].Workflow != "ops" || unserved[0].Version != opsVersion || unserved[0].Queued != 1 ||
		!unserved[0].OldestQueuedAt.Equal(queuedAt) || !strings.Contains(unserved[0].Reason, "no worker serves version "+opsVersion) {
		t.Errorf("queue -unserved -format json = %+v, want the queued task of %s", unserved, opsVersion)
	}
	if err := s.AnnounceWorker(ctx, "worker-a", []string{opsVersion}, nil, now.Add(-2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if out := e.ok("queue", "-unserved"); out != "every queued task has a live worker that serves its version\n" {
		t.Errorf("queue -unserved once worker-a serves the version = %q", out)
	}
	if err := s.AnnounceWorker(ctx, "worker-a", nil, nil, now.Add(-2*time.Second)); err != nil {
		t.Fatal(err)
	}

	var workflows []ops.WorkflowSummary
	e.json(&workflows, "workflows")
	var got []string
	for _, w := range workflows {
		got = append(got, fmt.Sprintf("%s %d %s %s", w.Name, w.Steps, w.OnFailure, w.SavedAt.Format(time.TimeOnly)))
	}
	if diff := cmp.Diff([]string{"chain 3  00:00:00", "ops 5 alert 00:01:00"}, got); diff != "" {
		t.Errorf("workflows -format json (-want +got):\n%s", diff)
	}
}

func TestOpsCommandsOnAnEmptySchema(t *testing.T) {
	e := newOpsEnv(t)
	tests := []struct {
		args       []string
		text, json string
	}{
		{[]string{"runs", "list"}, "no runs\n", "{\n  \"runs\": []\n}\n"},
		{[]string{"workers"}, "no workers\n", "[]\n"},
		{[]string{"queue"}, "nothing queued or running\n", "[]\n"},
		{[]string{"workflows"}, "no workflows stored\n", "[]\n"},
		{[]string{"schedules"}, "no schedules\n", "[]\n"},
	}
	for _, tt := range tests {
		if out := e.ok(tt.args...); out != tt.text {
			t.Errorf("%v = %q, want %q", tt.args, out, tt.text)
		}
		if out := e.ok(append(tt.args, "-format", "json")...); out != tt.json {
			t.Errorf("%v -format json = %q, want %q", tt.args, out, tt.json)
		}
	}
}

// execRuns runs trellis runs with someone answering answers (a line
// each, "y" for yes) on a terminal.
func (e *opsEnv) execRuns(answers string, args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	args = append(args, "-database-url", e.url)
	var out, errOut bytes.Buffer
	confirm := askOn(strings.NewReader(answers), &errOut)
	code = RunsCommand{Clock: e.h.Clock, Confirm: confirm}.Run(e.t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunsWhere(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	for _, tt := range []struct {
		flags []string
		want  []int
	}{
		{[]string{"-workflow", "ops", "-where", `input.mode == "fail"`}, []int{runOpsFailed}},
		{[]string{"-workflow", "ops", "-where", `input.mode == "ok" && tenant == "acme"`}, []int{runOpsDone}},
		{[]string{"-workflow", "ops", "-where", `input.label.startsWith("check")`}, []int{runOpsFailed}},
		{[]string{"-workflow", "ops", "-where", `!has(input.label)`}, []int{runOpsBeta, runOpsDone}},
		{[]string{"-workflow", "chain", "-where", `input.start >= 10`, "-status", "running"}, []int{runChainQueue}},
		{[]string{"-workflow", "chain", "-where", `created < timestamp("2030-01-01T00:04:00Z")`}, []int{runChainDone}},
	} {
		var page ops.RunPage
		e.json(&page, append([]string{"runs", "list"}, tt.flags...)...)
		want := []uuid.UUID{}
		for _, i := range tt.want {
			want = append(want, e.runs[i])
		}
		if diff := cmp.Diff(want, runIDs(page.Runs)); diff != "" {
			t.Errorf("runs list %s (-want +got):\n%s", strings.Join(tt.flags, " "), e.normalise(diff))
		}
	}
	for where, want := range map[string]string{
		"input.strat > 1":  "-where \"input.strat > 1\" does not type-check against the input schema of chain@",
		"input.start":      "must be a boolean expression",
		`status == "DONE"`: `"DONE" is not a run status`,
	} {
		code, _, errOut := e.exec("runs", "list", "-workflow", "chain", "-where", where)
		if code == ExitOK || !strings.Contains(errOut, want) {
			t.Errorf("runs list -where %q = %d %q, want %q", where, code, errOut, want)
		}
	}
	code, _, errOut := e.exec("runs", "list", "-workflow", "chain", "-where", "input.strat > 1")
	if code != ExitUsage || !strings.Contains(errOut, "1:6: undefined field 'strat'") {
		t.Errorf("a typo in -where = %d %q, want a usage error at 1:6", code, errOut)
	}
	// An evaluation error is each run's: the runs are left out and the
	// note says why.
	code, out, errOut := e.exec("runs", "list", "-workflow", "chain", "-where", "input.start / 0 > 1")
	if code != ExitOK || !strings.Contains(out, "no runs") || !strings.Contains(errOut, "note: 3 runs could not be evaluated") || !strings.Contains(errOut, "division by zero") {
		t.Errorf("runs list -where with a division by zero = %d %q %q, want no runs and a note naming the error", code, out, errOut)
	}
}

// TestRunsWhereOddRuns: runs whose stored inputs a filter cannot read
// (written by an older version, by hand, or under an older schema) never
// fail a listing or a bulk action; they are left out, counted and named.
func TestRunsWhereOddRuns(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	ctx := t.Context()
	chain, err := e.h.Store.GetRun(ctx, e.runs[runChainDone])
	if err != nil {
		t.Fatal(err)
	}
	var odd []uuid.UUID
	for _, in := range []string{`{"start": 1e30}`, `{"start": "12", "note": "a\u0000b"}`} {
		id := uuid.Must(uuid.NewV7())
		if _, err := e.h.Store.CreateRuns(ctx, store.CreateRuns{Now: e.h.Now(), Runs: []store.NewRun{{
			ID: id, Workflow: "chain", Version: chain.Version, Tenant: "default", Input: []byte(in),
		}}}); err != nil {
			t.Fatal(err)
		}
		odd = append(odd, e.created(id))
	}
	var page ops.RunPage
	e.json(&page, "runs", "list", "-workflow", "chain", "-where", "input.start >= 0")
	if page.Unevaluated != 2 || len(page.Runs) != 3 || slices.ContainsFunc(page.Runs, func(r ops.Run) bool { return slices.Contains(odd, r.ID) }) {
		t.Errorf("runs list -where over two odd runs: %d runs, %d unevaluated; want the 3 others, 2 unevaluated", len(page.Runs), page.Unevaluated)
	}
	_, _, errOut := e.exec("runs", "list", "-workflow", "chain", "-where", "input.start >= 0")
	for _, want := range []string{"note: 2 runs could not be evaluated", odd[0].String(), "input.start: want an integer, got a number", odd[1].String(), "got a string"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("runs list -where over odd runs: stderr %q, want %q", errOut, want)
		}
	}
	// The pushed-down equality is checked by the store (Postgres reads
	// inputs as jsonb, which refuses \u0000): neither odd run contains
	// {"start": 12}, so neither reaches the filter.
	var eq ops.RunPage
	e.json(&eq, "runs", "list", "-workflow", "chain", "-where", "input.start == 12")
	if eq.Unevaluated != 0 || len(eq.Runs) != 0 {
		t.Errorf("runs list -where input.start == 12: %d runs, %d unevaluated; want none", len(eq.Runs), eq.Unevaluated)
	}

	// A bulk action never acts on them, and says how many it left out.
	var dry struct {
		Action      string      `json:"action"`
		DryRun      bool        `json:"dryRun"`
		Selected    int         `json:"selected"`
		Runs        []uuid.UUID `json:"runs"`
		Unevaluated int         `json:"unevaluated"`
	}
	e.json(&dry, "runs", "cancel", "-workflow", "chain", "-where", "input.start >= 0", "-dry-run")
	if dry.Unevaluated != 2 || slices.ContainsFunc(dry.Runs, func(id uuid.UUID) bool { return slices.Contains(odd, id) }) {
		t.Errorf("runs cancel -dry-run over odd runs: %+v; want them left out and counted", dry)
	}
	code, out, errOut := e.exec("runs", "cancel", "-workflow", "chain", "-where", "input.start >= 0", "-yes")
	if code != ExitOK || !strings.Contains(errOut, "note: 2 runs could not be evaluated") {
		t.Errorf("runs cancel -where over odd runs = %d %q %q, want done with a note", code, out, errOut)
	}
	for _, id := range odd {
		if r, err := e.h.Store.GetRun(ctx, id); err != nil || r.Status != runtime.RunRunning {
			t.Errorf("odd run %s after the bulk cancel: %v, %v; want it left RUNNING", id, r.Status, err)
		}
	}

	// A page that spends its budget says so and goes on.
	code, out, errOut = e.exec("runs", "list", "-workflow", "chain", "-where", "input.start >= 0", "-where-budget", "1")
	if code != ExitOK || !strings.Contains(errOut, "CEL budget of 1 ") || !strings.Contains(out, "next page: -after") {
		t.Errorf("runs list -where-budget 1 = %d %q %q, want a page stopped by the budget, with a next page", code, out, errOut)
	}
	if code, _, errOut := e.exec("runs", "list", "-workflow", "chain", "-where", "input.start >= 0", "-where-timeout", "-1s"); code != ExitUsage || !strings.Contains(errOut, "-where-timeout") {
		t.Errorf("runs list -where-timeout -1s = %d %q, want a usage error", code, errOut)
	}
}

func TestRunsBulkCancelRetry(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	status := func(i int) runtime.RunStatus {
		r, err := e.h.Engine.Result(e.t.Context(), e.runs[i])
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	failing := []string{"-workflow", "ops", "-where", `input.mode == "fail"`}

	// A dry run shows what would be retried.
	e.golden("runs-retry-dry-run.txt", e.ok(append([]string{"runs", "retry", "-dry-run"}, failing...)...))
	var dry struct {
		Action   string
		DryRun   bool
		Selected int
		Runs     []uuid.UUID
	}
	e.json(&dry, append([]string{"runs", "retry", "-dry-run"}, failing...)...)
	if dry.Action != "retry" || !dry.DryRun || dry.Selected != 1 || len(dry.Runs) != 1 || dry.Runs[0] != e.runs[runOpsFailed] {
		t.Errorf("retry -dry-run -format json = %+v", dry)
	}

	// Without a terminal to confirm on, it takes -yes.
	code, _, errOut := e.exec(append([]string{"runs", "retry"}, failing...)...)
	if code != ExitNotConfirmed || !strings.Contains(errOut, "selects 1 run; nothing changed: standard input is not a terminal to confirm on, so run again with -yes to retry them") {
		t.Errorf("retry without -yes = %d %q", code, errOut)
	}
	// On a terminal, it asks; no changes nothing.
	code, _, errOut = e.execRuns("n\n", append([]string{"retry"}, failing...)...)
	if code != ExitNotConfirmed || !strings.Contains(errOut, "retry 1 run? [y/N]") || !strings.Contains(errOut, "not confirmed; nothing changed") {
		t.Errorf("retry answered no = %d %q", code, errOut)
	}
	if st := status(runOpsFailed); st != runtime.RunFailed {
		t.Fatalf("the run is %s after a retry that was not confirmed", st)
	}
	code, out, errOut := e.execRuns("y\n", append([]string{"retry"}, failing...)...)
	if code != ExitOK || status(runOpsFailed) != runtime.RunRunning {
		t.Errorf("retry answered yes = %d %q %q; the run is %s", code, out, errOut, status(runOpsFailed))
	}
	e.golden("runs-retry-bulk.txt", out)

	// Cancel every running run of ops: the retried one and beta's.
	var bulk struct {
		Action   string
		Selected int
		Outcomes map[ops.Outcome]int
		Problems []ops.ActionResult
	}
	e.json(&bulk, "runs", "cancel", "-workflow", "ops", "-yes")
	if bulk.Action != "cancel" || bulk.Selected != 2 || bulk.Outcomes[ops.Cancelled] != 2 || len(bulk.Problems) != 0 {
		t.Errorf("cancel -workflow ops -yes = %+v", bulk)
	}
	for _, i := range []int{runOpsFailed, runOpsBeta, runChainQueue} {
		want := runtime.RunCancelled
		if i == runChainQueue {
			want = runtime.RunRunning // another workflow
		}
		if st := status(i); st != want {
			t.Errorf("run %d is %s, want %s", i, st, want)
		}
	}
	if out := e.ok("runs", "cancel", "-workflow", "ops", "-yes"); out != "no runs to cancel\n" {
		t.Errorf("cancel with nothing selected printed %q", out)
	}
}

type lineCharger struct{}

func (lineCharger) ChargeLine(_ context.Context, item wf.OrdersChargeLineItem) (wf.OrdersChargeLineOutput, error) {
	return wf.OrdersChargeLineOutput{SKU: item.SKU, ChargeID: "ch-" + item.SKU}, nil
}

func (lineCharger) Total(_ context.Context, _ wf.OrdersInput, p wf.OrdersTotalParents) (wf.OrdersTotalOutput, error) {
	return wf.OrdersTotalOutput{Charges: int64(len(p.ChargeLine))}, nil
}

// TestRunsChildren shows the runs a map step started: counted on the
// parent's step, listed with -parent, each naming its parent.
func TestRunsChildren(t *testing.T) {
	e := newOpsEnv(t)
	orders, err := wf.RegisterOrders(e.h.Engine, lineCharger{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := orders.Run(t.Context(), wf.OrdersInput{OrderID: "o-1", Lines: []wf.OrdersInputLinesItem{
		{SKU: "a", Cents: 1}, {SKU: "b", Cents: 2}, {SKU: "free", Cents: 0}, {SKU: "c", Cents: 3},
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := e.ok("runs", "show", res.ID.String())
	for _, want := range []string{"3 child runs: 3 COMPLETED", "Child runs: trellis runs list -parent " + res.ID.String()} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q:\n%s", want, out)
		}
	}
	var page ops.RunPage
	e.json(&page, "runs", "list", "-parent", res.ID.String())
	if len(page.Runs) != 3 {
		t.Fatalf("runs list -parent = %d runs, want the 3 items", len(page.Runs))
	}
	for _, r := range page.Runs {
		if r.Parent == nil || r.Parent.ID != res.ID || r.Workflow != "orders/charge-line" {
			t.Errorf("item %s: workflow %s, parent %+v", r.ID, r.Workflow, r.Parent)
		}
	}
	item := page.Runs[len(page.Runs)-1] // the oldest: item 0
	if out := e.ok("runs", "show", item.ID.String()); !regexp.MustCompile(`Started by: +run ` + res.ID.String() + `, step charge-line \(index 0\)`).MatchString(out) {
		t.Errorf("runs show of an item:\n%s", out)
	}
	if code, _, stderr := e.exec("runs", "list", "-parent", "nope"); code != ExitUsage || !strings.Contains(stderr, `-parent "nope" is not a run id`) {
		t.Errorf("runs list -parent nope = %d, %s", code, stderr)
	}
}

// TestRunsShowWaitingStep: runs show says what a waiting step waits for
// and when it times out.
func TestRunsShowWaitingStep(t *testing.T) {
	e := newOpsEnv(t)
	w, err := e.h.Engine.Register(&runtime.WorkflowSpec{
		Name:   "confirming",
		Events: []runtime.EventSpec{{Name: "order-confirmed", Schema: `{"type":"object"}`}},
		Steps:  []runtime.StepSpec{{Name: "confirm", WaitFor: &runtime.WaitForSpec{Event: "order-confirmed", Timeout: 2 * time.Hour}}},
	}, runtime.Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := w.Trigger(t.Context(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	e.h.RunUntilIdle()
	out := e.ok("runs", "show", ref.ID.String())
	deadline := e.h.Start.Add(2 * time.Hour)
	if want := "waits for event order-confirmed, times out " + timestamp(&deadline); !strings.Contains(out, want) {
		t.Errorf("runs show does not say %q:\n%s", want, out)
	}
}

type deploySteps struct{}

func (deploySteps) Build(context.Context, wf.DeploysInput) error { return nil }

func (deploySteps) Promote(context.Context, wf.DeploysInput, wf.DeploysPromoteParents) error {
	return nil
}

// TestRunsShowRunWaitingForSlot: a run that waits for a slot of its
// runConcurrency key is listed QUEUED, and runs show says why.
func TestRunsShowRunWaitingForSlot(t *testing.T) {
	e := newOpsEnv(t)
	deploys, err := wf.RegisterDeploys(e.h.Engine, deploySteps{})
	if err != nil {
		t.Fatal(err)
	}
	for v := range 2 {
		ref, err := deploys.RunNoWait(t.Context(), wf.DeploysInput{Service: "api", Version: int64(v)})
		if err != nil {
			t.Fatal(err)
		}
		e.created(ref.ID)
		e.h.Clock.Advance(time.Second)
	}
	e.h.RunUntilIdle()
	e.golden("runs-list-run-limit.txt", e.ok("runs", "list"))
	e.golden("runs-show-run-limit.txt", e.ok("runs", "show", e.runs[1].String()))
	var run ops.RunDetail
	e.json(&run, "runs", "show", e.runs[1].String())
	if run.Status != runtime.RunRunning || !run.Waiting {
		t.Errorf("runs show -format json: status %s, waiting %v; want RUNNING, waiting", run.Status, run.Waiting)
	}
}

type reindexSteps struct{}

func (reindexSteps) Rebuild(context.Context, wf.ReindexInput) error { return nil }

// TestRunsShowDebouncedRun: a run waiting for its debounce window is
// listed QUEUED, and runs show says when it starts.
func TestRunsShowDebouncedRun(t *testing.T) {
	e := newOpsEnv(t)
	reindex, err := wf.RegisterReindex(e.h.Engine, reindexSteps{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reindex.RunNoWait(t.Context(), wf.ReindexInput{Index: "products", Change: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.created(ref.ID)
	e.h.RunUntilIdle()
	e.golden("runs-show-debounced.txt", e.ok("runs", "show", ref.ID.String()))
	if out := e.ok("runs", "list"); !strings.Contains(out, "QUEUED") {
		t.Errorf("runs list does not list the debounced run QUEUED:\n%s", out)
	}
	var run ops.RunDetail
	e.json(&run, "runs", "show", ref.ID.String())
	if want := e.h.Start.Add(30 * time.Second); !run.DebouncedUntil.Equal(want) {
		t.Errorf("runs show -format json: debouncedUntil %v, want %v", run.DebouncedUntil, want)
	}
}

func TestQueueShowsUnservedAndWorkersTheirLabels(t *testing.T) {
	e := newOpsEnv(t)
	ctx, s, now := e.t.Context(), e.h.Store, e.h.Now()
	_, err := s.CreateRuns(ctx, store.CreateRuns{Now: now.Add(-time.Minute), Runs: []store.NewRun{{
		ID: uuid.Must(uuid.NewV7()), Workflow: "render", Version: "render@1", Tenant: "default", Input: []byte(`{}`),
		Tasks: []store.NewTask{{Step: 0, Kind: store.KindCode, Plain: true, MaxAttempts: 1, Labels: []string{"gpu=a100"}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AnnounceWorker(ctx, "cpu-1", []string{"render@1"}, []string{"region=eu"}, now); err != nil {
		t.Fatal(err)
	}
	out := e.ok("queue")
	if !strings.Contains(out, "queued work no live worker can claim") ||
		!regexp.MustCompile(`(?m)^render\s+-\s+1\s+1m00s\s+waiting\s+the tasks need worker labels gpu=a100 that no live worker has`).MatchString(out) ||
		strings.Contains(out, "no worker serves version render@1") {
		t.Errorf("queue with a task only a gpu worker can run:\n%s", out)
	}
	if out := e.ok("workers"); !regexp.MustCompile(`(?m)^WORKER .* LABELS\s*\n.*cpu-1 .*region=eu\s*$`).MatchString(out) {
		t.Errorf("workers with labels:\n%s", out)
	}
	// A live gpu worker serves it: the section goes.
	if err := s.AnnounceWorker(ctx, "gpu-1", []string{"render@1"}, []string{"gpu=a100"}, now); err != nil {
		t.Fatal(err)
	}
	if out := e.ok("queue"); strings.Contains(out, "unserved") {
		t.Errorf("queue with a live gpu worker still lists unserved work:\n%s", out)
	}
}
