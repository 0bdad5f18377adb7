package ops_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

func TestCursorRoundTrip(t *testing.T) {
	c := store.RunCursor{CreatedAt: time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC), ID: uuid.Must(uuid.NewV7())}
	got, err := ops.ParseCursor(ops.FormatCursor(c))
	if err != nil || got == nil || !got.CreatedAt.Equal(c.CreatedAt) || got.ID != c.ID {
		t.Errorf("ParseCursor(FormatCursor(%v)) = %v, %v", c, got, err)
	}
	if got, err := ops.ParseCursor(""); got != nil || err != nil {
		t.Errorf(`ParseCursor("") = %v, %v; want the start`, got, err)
	}
	valid := ops.FormatCursor(c)
	raw, _ := base64.RawURLEncoding.DecodeString(valid)
	raw[0] = 2 // a version this code does not know
	for _, bad := range []string{"x", valid[:len(valid)-2], base64.RawURLEncoding.EncodeToString(raw), valid + "AA"} {
		if _, err := ops.ParseCursor(bad); err == nil {
			t.Errorf("ParseCursor(%q) accepted", bad)
		}
	}
}

func TestRunFilterValidate(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		f    ops.RunFilter
		want string // "" when valid
	}{
		{ops.RunFilter{}, ""},
		{ops.RunFilter{Statuses: ops.RunStatuses(), Limit: ops.MaxLimit, CreatedFrom: t0, CreatedTo: t0.Add(time.Second)}, ""},
		{ops.RunFilter{Statuses: []runtime.RunStatus{"failed"}}, `unknown run status "failed": use RUNNING, COMPLETED, FAILED, CANCELLED`},
		{ops.RunFilter{Limit: ops.MaxLimit + 1}, "limit 1001 is out of range"},
		{ops.RunFilter{CreatedFrom: t0, CreatedTo: t0}, "the time range is empty"},
		{ops.RunFilter{After: "nope"}, `invalid cursor "nope"`},
	}
	for _, tt := range tests {
		err := tt.f.Validate()
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.f, err, tt.want)
		}
	}
}

// chain fails at its second step when the input's start is negative.
type chain struct{}

func (chain) First(_ context.Context, in wf.ChainInput) (wf.ChainFirstOutput, error) {
	return wf.ChainFirstOutput{Value: in.Start + 1}, nil
}

func (chain) Second(_ context.Context, in wf.ChainInput, p wf.ChainSecondParents) (wf.ChainSecondOutput, error) {
	if in.Start < 0 {
		return wf.ChainSecondOutput{}, runtime.NonRetryable(errors.New("negative start"))
	}
	return wf.ChainSecondOutput{Value: p.First.Value + 1}, nil
}

func (chain) Third(_ context.Context, _ wf.ChainInput, p wf.ChainThirdParents) (wf.ChainThirdOutput, error) {
	return wf.ChainThirdOutput{Value: p.Second.Value + 1}, nil
}

// The Admin on the memory store: the same calls as on Postgres, which the
// trellis CLI's tests exercise.
func TestAdmin(t *testing.T) {
	h := trellistest.New(t)
	ctx := t.Context()
	client, err := wf.RegisterChain(h.Engine, chain{})
	if err != nil {
		t.Fatal(err)
	}
	admin := ops.New(h.Engine)
	var ids []uuid.UUID
	for i := range 5 {
		start := int64(i)
		if i == 3 {
			start = -1 // fails at second
		}
		res, _ := client.Run(ctx, wf.ChainInput{Start: start})
		ids = append(ids, res.ID)
		h.Clock.Advance(time.Second)
	}

	// Two pages of two and one of one, newest first.
	var listed []uuid.UUID
	f := ops.RunFilter{Limit: 2}
	for range 3 {
		page, err := admin.ListRuns(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Runs {
			listed = append(listed, r.ID)
		}
		f.After = page.Next
	}
	if want := []uuid.UUID{ids[4], ids[3], ids[2], ids[1], ids[0]}; !cmp.Equal(want, listed) || f.After != "" {
		t.Errorf("pages = %v (next %q), want %v and no next", listed, f.After, want)
	}
	page, err := admin.ListRuns(ctx, ops.RunFilter{Statuses: []runtime.RunStatus{runtime.RunFailed}})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != ids[3] {
		t.Fatalf("failed runs = %+v, %v", page, err)
	}
	if f := page.Runs[0].Failure; f == nil || f.Step != "second" || f.Error != "negative start" {
		t.Errorf("failure = %+v, want step second named", f)
	}

	run, err := admin.GetRun(ctx, ids[3])
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, s := range run.Steps {
		steps = append(steps, fmt.Sprintf("%s %s %d %s", s.Name, s.Status, s.Attempts, s.Output))
	}
	want := []string{`first COMPLETED 1 {"value":0}`, "second FAILED 1 ", "third CANCELLED 0 "}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if _, err := admin.GetRun(ctx, uuid.New()); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("GetRun(unknown) = %v, want ErrRunNotFound", err)
	}
	events, err := admin.Engine().Events(ctx, ids[0])
	if err != nil || len(events) == 0 || events[0].Step != "first" || events[0].Type != runtime.EventQueued {
		t.Errorf("Events = %+v, %v", events, err)
	}

	unknown := uuid.New()
	gotResults := admin.Retry(ctx, ids[3], ids[0], unknown)
	wantResults := []ops.ActionResult{
		{Run: ids[3], Outcome: ops.Retried},
		{Run: ids[0], Outcome: ops.NotRetryable, Status: runtime.RunCompleted},
		{Run: unknown, Outcome: ops.NotFound},
	}
	if diff := cmp.Diff(wantResults, gotResults); diff != "" {
		t.Errorf("Retry (-want +got):\n%s", diff)
	}
	gotResults = admin.Cancel(ctx, ids[3], ids[3])
	wantResults = []ops.ActionResult{{Run: ids[3], Outcome: ops.Cancelled}, {Run: ids[3], Outcome: ops.AlreadyEnded, Status: runtime.RunCancelled}}
	if diff := cmp.Diff(wantResults, gotResults); diff != "" {
		t.Errorf("Cancel (-want +got):\n%s", diff)
	}
	if !wantResults[1].OK() || (ops.ActionResult{Outcome: ops.NotFound}).OK() {
		t.Error("OK: a run left as it was is done; a missing one is not")
	}

	workflows, err := admin.Workflows(ctx)
	if err != nil || len(workflows) != 1 || workflows[0].Name != "chain" || workflows[0].Steps != 3 || !workflows[0].SavedAt.Equal(h.Start) {
		t.Errorf("Workflows = %+v, %v", workflows, err)
	}
	if _, err := h.Store.Heartbeat(ctx, "w1", h.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	workers, err := admin.Workers(ctx)
	if err != nil || len(workers) != 1 || workers[0].Alive {
		t.Errorf("Workers = %+v, %v; want w1, silent for longer than StaleAfter", workers, err)
	}
	queue, err := admin.Queue(ctx)
	if err != nil || len(queue) != 0 {
		t.Errorf("Queue = %+v, %v; want nothing queued", queue, err)
	}
}

// List the failed runs of a store, newest first, a page at a time.
func ExampleAdmin_ListRuns() {
	// An engine with some runs, driven by hand (see runtime.Driver).
	engine, _ := runtime.New(runtime.Config{Store: memstore.New(), Clock: clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))})
	client, _ := wf.RegisterChain(engine, chain{})
	_, _ = runtime.NewDriver(engine)
	for _, start := range []int64{1, -1, 2, -2} {
		_, _ = client.Run(context.Background(), wf.ChainInput{Start: start})
	}

	// On Postgres: runtime.New(runtime.Config{Store: pgstore.New(pool)}),
	// not started.
	admin := ops.New(engine)
	filter := ops.RunFilter{Statuses: []runtime.RunStatus{runtime.RunFailed}, Limit: 1}
	for {
		page, err := admin.ListRuns(context.Background(), filter)
		if err != nil {
			panic(err)
		}
		for _, r := range page.Runs {
			fmt.Println(r.Workflow, r.Status, r.Failure.Step, r.Failure.Error)
		}
		if page.Next == "" {
			break
		}
		filter.After = page.Next
	}
	// Output:
	// chain FAILED second negative start
	// chain FAILED second negative start
}
