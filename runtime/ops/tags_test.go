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
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// TestListRunsByTags: a listing keeps the runs carrying the tags of its
// filter, a where filter reads tags and narrows to those it equates (a
// page finds them however many other runs there are), and a bulk
// selection selects by them.
func TestListRunsByTags(t *testing.T) {
	stores(t, func(t *testing.T, h *trellistest.Harness) {
		ctx := t.Context()
		client, err := wf.RegisterChain(h.Engine, chain{})
		if err != nil {
			t.Fatal(err)
		}
		admin := ops.New(h.Engine)
		// The oldest run is the one customer rare's; then acme's, by channel.
		tagged := []map[string]string{
			{"customer": "rare"},
			{"customer": "acme", "channel": "web"},
			{"customer": "acme", "channel": "api"},
			nil,
			{"customer": "acme", "channel": "web"},
			nil,
		}
		var ids []uuid.UUID
		for i, tags := range tagged {
			ref, err := client.RunNoWait(ctx, wf.ChainInput{Start: int64(i)}, runtime.WithTags(tags))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ref.ID)
			h.Clock.Advance(time.Second)
		}
		list := func(f ops.RunFilter) []uuid.UUID {
			t.Helper()
			page, err := admin.ListRuns(ctx, f)
			if err != nil {
				t.Fatalf("ListRuns(%+v): %v", f, err)
			}
			var got []uuid.UUID
			for _, r := range page.Runs {
				got = append(got, r.ID)
			}
			return got
		}
		for _, tc := range []struct {
			name string
			f    ops.RunFilter
			want []uuid.UUID
		}{
			{"a tag", ops.RunFilter{Tags: map[string]string{"customer": "acme"}}, []uuid.UUID{ids[4], ids[2], ids[1]}},
			{"two tags", ops.RunFilter{Tags: map[string]string{"customer": "acme", "channel": "web"}}, []uuid.UUID{ids[4], ids[1]}},
			{"where", ops.RunFilter{Workflow: "chain", Where: `tags.customer == "acme" && tags.channel != "web"`}, []uuid.UUID{ids[2]}},
			{"where a tag is absent", ops.RunFilter{Workflow: "chain", Where: `!("customer" in tags)`}, []uuid.UUID{ids[5], ids[3]}},
			{"where and tags", ops.RunFilter{Workflow: "chain", Where: `tags["channel"] == "web"`, Tags: map[string]string{"customer": "acme"}}, []uuid.UUID{ids[4], ids[1]}},
			{"where against tags", ops.RunFilter{Workflow: "chain", Where: `tags.customer == "rare"`, Tags: map[string]string{"customer": "acme"}}, nil},
		} {
			if got := list(tc.f); !cmp.Equal(got, tc.want) {
				t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
			}
		}

		// Narrowed to the tag, a page reading two runs at most finds the
		// oldest run, behind five others.
		restore := ops.SetWhereScan(2, 2)
		page, err := admin.ListRuns(ctx, ops.RunFilter{Workflow: "chain", Where: `tags.customer == "rare"`})
		restore()
		if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != ids[0] || page.Next != "" {
			t.Errorf("where tags.customer == \"rare\" on a scan of 2 runs = %+v, %v; want run %s and no next page", page, err, ids[0])
		}
		if page.Runs[0].Tags["customer"] != "rare" {
			t.Errorf("the listed run's tags = %v", page.Runs[0].Tags)
		}

		sel, err := admin.Select(ctx, ops.RunFilter{Tags: map[string]string{"channel": "web"}})
		if err != nil || !cmp.Equal(sel.Runs, []uuid.UUID{ids[4], ids[1]}) {
			t.Errorf("Select(channel=web) = %+v, %v", sel, err)
		}

		_, err = admin.ListRuns(ctx, ops.RunFilter{Tags: map[string]string{"Customer": "acme"}})
		if !errors.Is(err, runtime.ErrInvalidTag) || !strings.Contains(err.Error(), `tag key "Customer"`) {
			t.Errorf("a filter by an upper-case key: %v, want ErrInvalidTag naming it", err)
		}
	})
}
