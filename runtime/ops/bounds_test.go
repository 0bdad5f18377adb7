package ops_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// dearWhere is true of every run, and costs some hundreds of CEL cost
// units to find so, on every run.
const dearWhere = `[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, a * b + input.n != -1))`

// walk lists every page of a listing, returning the runs and the pages.
func walk(t *testing.T, admin *ops.Admin, f ops.RunFilter) ([]uuid.UUID, []*ops.RunPage) {
	t.Helper()
	var runs []uuid.UUID
	var pages []*ops.RunPage
	for range 1000 {
		page, err := admin.ListRuns(t.Context(), f)
		if err != nil {
			t.Fatalf("ListRuns(where %q): %v", f.Where, err)
		}
		pages = append(pages, page)
		for _, r := range page.Runs {
			runs = append(runs, r.ID)
		}
		if page.Next == "" {
			return runs, pages
		}
		f.After = page.Next
	}
	t.Fatal("the listing does not end")
	return nil, nil
}

func TestWhereBudget(t *testing.T) {
	stores(t, func(t *testing.T, h *trellistest.Harness) {
		var inputs []string
		for i := range 30 {
			inputs = append(inputs, fmt.Sprintf(`{"n": %d}`, i))
		}
		ids := storeRuns(t, h, inputs...)
		slices.Reverse(ids) // newest first
		// A budget of a few evaluations of the dear filter, far more than
		// the cheap one needs for every run.
		admin, err := ops.NewWithConfig(h.Engine, ops.Config{WhereBudget: 3000})
		if err != nil {
			t.Fatal(err)
		}
		page, err := admin.ListRuns(t.Context(), ops.RunFilter{Workflow: "odd", Where: dearWhere})
		if err != nil {
			t.Fatal(err)
		}
		if page.Stopped != ops.StoppedBudget || page.Next == "" || len(page.Runs) == 0 || len(page.Runs) >= 30 ||
			!slices.ContainsFunc(page.Notes, func(n string) bool { return strings.Contains(n, "CEL budget of 3000") }) {
			t.Errorf("a dear filter over 30 runs: %d runs, stopped %q, next %q, notes %q; want a short page stopped by the budget, with a note and a next page",
				len(page.Runs), page.Stopped, page.Next, page.Notes)
		}
		// Walking on gives every run once, a few pages at a time.
		got, pages := walk(t, admin, ops.RunFilter{Workflow: "odd", Where: dearWhere})
		if diff := cmp.Diff(ids, got); diff != "" {
			t.Errorf("walking the listing under the budget (-want +got):\n%s", diff)
		}
		if len(pages) < 3 {
			t.Errorf("the walk took %d pages; want the budget to cut it into several", len(pages))
		}
		// A cheap filter fits the same budget in one page; the default
		// budget fits the dear one.
		if got, pages := walk(t, admin, ops.RunFilter{Workflow: "odd", Where: "input.n >= 0"}); len(pages) != 1 || len(got) != 30 {
			t.Errorf("a cheap filter: %d runs in %d pages, want 30 in 1", len(got), len(pages))
		}
		if got, pages := walk(t, ops.New(h.Engine), ops.RunFilter{Workflow: "odd", Where: dearWhere}); len(pages) != 1 || len(got) != 30 {
			t.Errorf("the default budget: %d runs in %d pages, want 30 in 1", len(got), len(pages))
		}
		// A bulk action's selection goes on past every stop.
		sel, err := admin.Select(t.Context(), ops.RunFilter{Workflow: "odd", Where: dearWhere})
		if err != nil || !cmp.Equal(ids, sel.Runs) {
			t.Errorf("Select under the budget: %d runs, %v; want all 30", len(sel.Runs), err)
		}
	})
}

// slowStore is a store whose every scan takes 6 seconds of the engine's
// clock.
type slowStore struct {
	store.Store
	clock *clock.Virtual
}

func (s *slowStore) ScanRuns(ctx context.Context, q store.RunQuery) ([]store.Run, *store.RunCursor, error) {
	s.clock.Advance(6 * time.Second)
	return s.Store.ScanRuns(ctx, q)
}

func TestWhereDeadline(t *testing.T) {
	for name, s := range map[string]func(t *testing.T) store.Store{
		"memory":   func(*testing.T) store.Store { return nil },
		"postgres": func(t *testing.T) store.Store { return pgstore.New(pgtest.Pool(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			slow := &slowStore{}
			opts := []trellistest.Option{trellistest.WithConfig(func(c *runtime.Config) {
				if st := s(t); st != nil {
					c.Store = st
				}
				slow.Store, slow.clock = c.Store, c.Clock.(*clock.Virtual)
				c.Store = slow
			})}
			h := trellistest.New(t, opts...)
			var inputs []string
			for i := range 10 {
				inputs = append(inputs, fmt.Sprintf(`{"n": %d}`, i))
			}
			ids := storeRuns(t, h, inputs...)
			slices.Reverse(ids)
			defer ops.SetWhereScan(1000, 2)()
			admin, err := ops.NewWithConfig(h.Engine, ops.Config{WhereTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			page, err := admin.ListRuns(t.Context(), ops.RunFilter{Workflow: "odd", Where: "input.n >= 0"})
			if err != nil {
				t.Fatal(err)
			}
			if page.Stopped != ops.StoppedDeadline || page.Next == "" || len(page.Runs) != 2 ||
				!slices.ContainsFunc(page.Notes, func(n string) bool { return strings.Contains(n, "time limit of 10s") }) {
				t.Errorf("scans of 6s under a 10s limit: %d runs, stopped %q, next %q, notes %q; want the 2 runs of the first scan (the second ends past the deadline), stopped by it, with a note and a next page",
					len(page.Runs), page.Stopped, page.Next, page.Notes)
			}
			got, _ := walk(t, admin, ops.RunFilter{Workflow: "odd", Where: "input.n >= 0"})
			if diff := cmp.Diff(ids, got); diff != "" {
				t.Errorf("walking the listing under the deadline (-want +got):\n%s", diff)
			}
			if _, err := ops.NewWithConfig(h.Engine, ops.Config{WhereTimeout: -time.Second}); err == nil {
				t.Error("a negative timeout was accepted")
			}
		})
	}
}
