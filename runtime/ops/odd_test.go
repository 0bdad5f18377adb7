package ops_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// oddInputs are stored inputs of the workflow "odd" (input n: integer,
// at: date-time, s: string), some of which no filter can read: rows an
// older version of the code, a hand-written insert or a schema change
// left behind. Trigger validation would refuse most of them, so they are
// written to the store directly.
var oddInputs = []struct{ name, input string }{
	{"good", `{"n": 5, "at": "2030-01-01T00:00:00Z", "s": "x"}`},
	{"huge", `{"n": 1e30}`},                                   // not an int64
	{"leap", `{"n": 5, "at": "2016-12-31T23:59:60Z"}`},        // a leap second Go cannot parse
	{"string", `{"n": "7"}`},                                  // stored under a schema where n was a string
	{"nul", `{"n": 5, "s": "a\u0000b"}`},                      // jsonb refuses \u0000
	{"long", `{"n": "` + strings.Repeat("x", 100_000) + `"}`}, // a huge value, in the reason too
	{"vast", `{"n": 1, "x": 1e200000}`},                       // beyond jsonb's numeric
	{"later", `{"n": 9, "at": "2030-01-02T00:00:00Z"}`},
}

// storeOdd saves the workflow "odd" (input n: integer, at: date-time,
// s: string) and creates a run per oddInputs, a second apart; it returns
// the runs' ids by name.
func storeOdd(t *testing.T, h *trellistest.Harness) map[string]uuid.UUID {
	t.Helper()
	inputs := make([]string, len(oddInputs))
	for i, in := range oddInputs {
		inputs[i] = in.input
	}
	created := storeRuns(t, h, inputs...)
	ids := map[string]uuid.UUID{}
	for i, in := range oddInputs {
		ids[in.name] = created[i]
	}
	return ids
}

// storeRuns saves the workflow "odd" and writes a run of it per input to
// the store directly, whatever the input, a second apart; it returns their
// ids in order.
func storeRuns(t *testing.T, h *trellistest.Harness, inputs ...string) []uuid.UUID {
	t.Helper()
	ctx := t.Context()
	schema := `{"type":"object","properties":{"n":{"type":"integer"},"at":{"type":"string","format":"date-time"},"s":{"type":"string"}}}`
	spec, _ := json.Marshal(runtime.WorkflowSpec{Name: "odd", InputSchema: schema})
	if err := h.Engine.Store().SaveWorkflow(ctx, store.WorkflowVersion{Version: "odd@1", Name: "odd", Spec: spec, SavedAt: h.Now()}); err != nil {
		t.Fatal(err)
	}
	var ids []uuid.UUID
	for _, in := range inputs {
		id := uuid.Must(uuid.NewV7())
		if _, err := h.Engine.Store().CreateRuns(ctx, store.CreateRuns{Now: h.Now(), Runs: []store.NewRun{{
			ID: id, Workflow: "odd", Version: "odd@1", Tenant: "default", Input: []byte(in),
		}}}); err != nil {
			t.Fatalf("creating a run with input %.40s: %v", in, err)
		}
		ids = append(ids, id)
		h.Clock.Advance(time.Second)
	}
	return ids
}

func TestWhereOddRows(t *testing.T) {
	stores(t, func(t *testing.T, h *trellistest.Harness) {
		ctx := t.Context()
		ids := storeOdd(t, h)
		name := map[uuid.UUID]string{}
		for n, id := range ids {
			name[id] = n
		}
		admin := ops.New(h.Engine)
		for _, tt := range []struct {
			where       string
			want        []string // newest first
			unevaluated []string // newest first
		}{
			// Every row is read: those that cannot be are left out and named.
			{"input.n > 3", []string{"later", "nul", "good"}, []string{"long", "string", "leap", "huge"}},
			// n == 5 is pushed down to the store, which must not fail on
			// an input it cannot compare (\u0000 for Postgres's jsonb).
			{"input.n == 5", []string{"nul", "good"}, []string{"leap"}},
			{`input.s.startsWith("a")`, []string{"nul"}, []string{"long", "string", "leap", "huge"}},
		} {
			page, err := admin.ListRuns(ctx, ops.RunFilter{Workflow: "odd", Where: tt.where})
			if err != nil {
				t.Errorf("ListRuns(where %q): %v; want the runs it can read", tt.where, err)
				continue
			}
			var got, skipped []string
			for _, r := range page.Runs {
				got = append(got, name[r.ID])
			}
			for _, u := range page.UnevaluatedRuns {
				skipped = append(skipped, name[u.Run])
				if len(u.Reason) > 200 {
					t.Errorf("where %q: the reason for run %s is %d bytes long; want it shortened", tt.where, name[u.Run], len(u.Reason))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("where %q: runs (-want +got):\n%s", tt.where, diff)
			}
			if want := tt.unevaluated[:min(3, len(tt.unevaluated))]; page.Unevaluated != len(tt.unevaluated) || !cmp.Equal(want, skipped) {
				t.Errorf("where %q: %d unevaluated, named %v; want %d, named %v", tt.where, page.Unevaluated, skipped, len(tt.unevaluated), want)
			}
			note := strings.Join(page.Notes, "\n")
			if !strings.Contains(note, "could not be evaluated") || !strings.Contains(note, ids[tt.unevaluated[0]].String()) {
				t.Errorf("where %q: notes %q; want them to say which runs could not be evaluated", tt.where, page.Notes)
			}
		}
		// Each reason says where and why.
		page, err := admin.ListRuns(ctx, ops.RunFilter{Workflow: "odd", Where: "input.n > 3"})
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]string{}
		for _, u := range page.UnevaluatedRuns {
			reasons[name[u.Run]] = u.Reason
		}
		for run, want := range map[string]string{"long": "input.n: want an integer, got a string", "string": "input.n: want an integer, got a string", "leap": `input.at: "2016-12-31T23:59:60Z" is not an RFC 3339 date-time`} {
			if !strings.Contains(reasons[run], want) {
				t.Errorf("reason for run %s: %q, want %q", run, reasons[run], want)
			}
		}

		// A bulk action selects only the runs the filter matched.
		sel, err := admin.Select(ctx, ops.RunFilter{Workflow: "odd", Where: "input.n > 3"})
		if err != nil {
			t.Fatal(err)
		}
		want := []uuid.UUID{ids["later"], ids["nul"], ids["good"]}
		if !cmp.Equal(want, sel.Runs) || sel.Unevaluated != 4 ||
			!slices.ContainsFunc(sel.Notes, func(n string) bool { return strings.Contains(n, "4 runs could not be evaluated") }) {
			t.Errorf("Select = %v, %d unevaluated, notes %q; want %v, 4 unevaluated, noted", sel.Runs, sel.Unevaluated, sel.Notes, want)
		}
	})
}
