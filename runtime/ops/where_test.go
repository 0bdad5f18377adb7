package ops_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// stores runs a test on the memory store and on Postgres.
func stores(t *testing.T, test func(t *testing.T, h *trellistest.Harness)) {
	t.Run("memory", func(t *testing.T) { test(t, trellistest.New(t)) })
	t.Run("postgres", func(t *testing.T) {
		test(t, trellistest.New(t, trellistest.WithStore(pgstore.New(pgtest.Pool(t)))))
	})
}

func TestListRunsWhere(t *testing.T) {
	stores(t, func(t *testing.T, h *trellistest.Harness) {
		ctx := t.Context()
		client, err := wf.RegisterChain(h.Engine, chain{})
		if err != nil {
			t.Fatal(err)
		}
		admin := ops.New(h.Engine)
		// Runs with start 0..9; those with a negative start fail.
		starts := []int64{0, 1, -2, 3, 4, -5, 6, 7, -8, 9}
		ids := map[int64]uuid.UUID{}
		for _, s := range starts {
			res, _ := client.Run(ctx, wf.ChainInput{Start: s})
			ids[s] = res.ID
			h.Clock.Advance(time.Second)
		}
		list := func(f ops.RunFilter) ([]int64, error) {
			f.Workflow = "chain"
			var got []int64
			for {
				page, err := admin.ListRuns(ctx, f)
				if err != nil {
					return nil, err
				}
				for _, r := range page.Runs {
					for s, id := range ids {
						if id == r.ID {
							got = append(got, s)
						}
					}
				}
				if page.Next == "" {
					return got, nil
				}
				f.After = page.Next
			}
		}
		mid := h.Start.Add(5 * time.Second).UTC().Format(time.RFC3339)
		for _, tt := range []struct {
			f    ops.RunFilter
			want []int64
		}{
			{ops.RunFilter{Where: "input.start > 5"}, []int64{9, 7, 6}},
			{ops.RunFilter{Where: "input.start == 3"}, []int64{3}},
			{ops.RunFilter{Where: "input.start in [1, 4, 100]"}, []int64{4, 1}},
			{ops.RunFilter{Where: `status == "FAILED"`}, []int64{-8, -5, -2}},
			{ops.RunFilter{Where: `status == "FAILED" && input.start < -4`}, []int64{-8, -5}},
			{ops.RunFilter{Where: "input.start % 2 == 0", Limit: 2}, []int64{-8, 6, 4, -2, 0}},
			{ops.RunFilter{Where: "input.start == 0"}, []int64{0}}, // the zero value: not pushed down
			{ops.RunFilter{Where: `created >= timestamp("` + mid + `") && input.start >= 0`}, []int64{9, 7, 6}},
			{ops.RunFilter{Where: `tenant == "default" && input.start == 9`, Statuses: []runtime.RunStatus{runtime.RunCompleted}}, []int64{9}},
			{ops.RunFilter{Where: `status == "FAILED"`, Statuses: []runtime.RunStatus{runtime.RunCompleted}}, nil},
		} {
			got, err := list(tt.f)
			if err != nil {
				t.Errorf("ListRuns(where %q): %v", tt.f.Where, err)
				continue
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ListRuns(where %q, limit %d) (-want +got):\n%s", tt.f.Where, tt.f.Limit, diff)
			}
		}

		// A page reads a bounded number of runs: short pages, then the rest.
		restore := ops.SetWhereScan(3, 2)
		got, err := list(ops.RunFilter{Where: "input.start < 0 || input.start == 9"})
		restore()
		if want := []int64{9, -8, -5, -2}; err != nil || !cmp.Equal(want, got) {
			t.Errorf("bounded scans = %v, %v; want %v", got, err, want)
		}

		// A typo is an error before any run is read, naming the place.
		_, err = admin.ListRuns(ctx, ops.RunFilter{Workflow: "chain", Where: "input.strat > 1"})
		var we *ops.WhereError
		if !errors.As(err, &we) || !strings.Contains(err.Error(), "1:6: undefined field 'strat'") {
			t.Errorf("where with a typo: %v, want a WhereError at 1:6", err)
		}
		for where, want := range map[string]string{
			`status == "DONE"`: `"DONE" is not a run status`,
			`input.start`:      "must be a boolean expression",
		} {
			if _, err := admin.ListRuns(ctx, ops.RunFilter{Workflow: "chain", Where: where}); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("where %q: %v, want %q", where, err, want)
			}
		}
		if _, err := admin.ListRuns(ctx, ops.RunFilter{Where: "input.start > 1"}); err == nil || !strings.Contains(err.Error(), "needs a workflow") {
			t.Errorf("where without a workflow: %v", err)
		}
		if _, err := admin.ListRuns(ctx, ops.RunFilter{Workflow: "nope", Where: "input.start > 1"}); err == nil || !strings.Contains(err.Error(), `no version of workflow "nope"`) {
			t.Errorf("where on an unknown workflow: %v", err)
		}

		// Select: every run a bulk action would act on.
		sel, err := admin.Select(ctx, ops.RunFilter{Workflow: "chain", Where: "input.start < 0"})
		if want := []uuid.UUID{ids[-8], ids[-5], ids[-2]}; err != nil || !cmp.Equal(want, sel.Runs) {
			t.Errorf("Select = %v, %v; want %v", sel, err, want)
		}
	})
}
