package runtime_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// testTags: a run keeps the tags it was triggered with, the items of its
// map steps and the runs of its child workflow steps carry them too, a
// second trigger under the same idempotency key leaves the first's, and
// tags out of bounds are refused, naming the tag, with nothing written.
func testTags(t *testing.T, newH newHarness) {
	h := newH(t)
	ctx := t.Context()
	orders, err := wf.RegisterOrders(h.Engine, &ordersSteps{})
	if err != nil {
		t.Fatal(err)
	}
	var labels atomic.Int64
	if _, err := h.Engine.Register(shipmentSpec(), shipmentHandlers(&labels)); err != nil {
		t.Fatal(err)
	}
	order, err := h.Engine.Register(orderSpec(), orderHandlers())
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{"customer": "acme", "channel": "web"}

	// childTags are the tags of every run the run's steps started.
	childTags := func(t *testing.T, id runtime.RunID, want int) {
		t.Helper()
		kids, err := h.Store.ListRuns(ctx, store.RunQuery{Parent: id})
		if err != nil || len(kids) != want {
			t.Fatalf("the runs %s started: %d, %v; want %d", id, len(kids), err, want)
		}
		for _, k := range kids {
			if !cmp.Equal(k.Tags, tags) {
				t.Errorf("run %s of %s, started by %s, has tags %v, want its parent's %v", k.ID, k.Workflow, id, k.Tags, tags)
			}
		}
	}

	t.Run("map items", func(t *testing.T) {
		lines := []wf.OrdersInputLinesItem{{SKU: "a", Cents: 1}, {SKU: "b", Cents: 2}, {SKU: "c", Cents: 3}}
		res, err := orders.Run(ctx, wf.OrdersInput{OrderID: "o-1", Lines: lines}, runtime.WithTags(map[string]string{"customer": "acme"}), runtime.WithTag("channel", "web"))
		if err != nil || res.Status != runtime.RunCompleted {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		got, err := h.Engine.Result(ctx, res.ID)
		if err != nil || !cmp.Equal(got.Tags, tags) {
			t.Fatalf("Result(%s).Tags = %v, %v; want %v", res.ID, got.Tags, err, tags)
		}
		childTags(t, res.ID, 3)
	})

	t.Run("child workflow runs", func(t *testing.T) {
		res, err := order.Run(ctx, json.RawMessage(`{"orderId":"o-2"}`), runtime.WithTags(tags))
		if err != nil || res.Status != runtime.RunCompleted || !cmp.Equal(res.Tags, tags) {
			t.Fatalf("Run = %+v, %v; want COMPLETED with tags %v", res, err, tags)
		}
		childTags(t, res.ID, 1)
	})

	t.Run("listed by tag", func(t *testing.T) {
		runs, err := h.Store.ListRuns(ctx, store.RunQuery{Tags: map[string]string{"customer": "acme"}, TopLevel: true})
		if err != nil || len(runs) != 2 {
			t.Fatalf("top-level runs tagged customer=acme: %d, %v; want 2", len(runs), err)
		}
	})

	t.Run("the first trigger's tags win", func(t *testing.T) {
		first, err := order.Trigger(ctx, json.RawMessage(`{"orderId":"o-3"}`), runtime.WithIdempotencyKey("o-3"), runtime.WithTag("customer", "acme"))
		if err != nil {
			t.Fatal(err)
		}
		again, err := order.Trigger(ctx, json.RawMessage(`{"orderId":"o-3"}`), runtime.WithIdempotencyKey("o-3"), runtime.WithTag("customer", "globex"))
		if err != nil || again.ID != first.ID || !again.Existing {
			t.Fatalf("the second trigger = %+v, %v; want run %s, existing", again, err, first.ID)
		}
		got, err := h.Engine.Result(ctx, first.ID)
		if err != nil || !cmp.Equal(got.Tags, map[string]string{"customer": "acme"}) {
			t.Errorf("tags after the second trigger = %v, %v; want the first's", got.Tags, err)
		}
	})

	t.Run("refused", func(t *testing.T) {
		many := map[string]string{}
		for i := range runtime.MaxTags + 1 {
			many[fmt.Sprintf("k%02d", i)] = "v"
		}
		big := map[string]string{}
		for i := range 9 {
			big[fmt.Sprintf("k%d", i)] = strings.Repeat("v", runtime.MaxTagValueBytes)
		}
		for _, tc := range []struct {
			name string
			tags map[string]string
			says string
		}{
			{"an upper-case key", map[string]string{"Customer": "acme"}, `tag key "Customer" has "C" at byte 0`},
			{"a key with a space", map[string]string{"the customer": "acme"}, `tag key "the customer" has " " at byte 3`},
			{"an empty key", map[string]string{"": "acme"}, "a tag key is empty"},
			{"a long key", map[string]string{strings.Repeat("k", runtime.MaxTagKeyBytes+1): "v"}, "bytes, over the limit of 64 (runtime.MaxTagKeyBytes)"},
			{"a long value", map[string]string{"note": strings.Repeat("x", runtime.MaxTagValueBytes+1)}, "tag note: the value is 257 bytes, over the limit of 256"},
			{"a NUL in a value", map[string]string{"note": "a\x00b"}, "tag note: the value contains a NUL byte"},
			{"invalid UTF-8", map[string]string{"note": "\xff"}, "tag note: the value is not valid UTF-8"},
			{"too many", many, "17 tags, over the limit of 16 (runtime.MaxTags)"},
			{"too many bytes", big, "over the limit of 2048 (runtime.MaxTagsBytes)"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before, _ := h.Store.ListRuns(ctx, store.RunQuery{Workflow: "order"})
				_, err := order.Trigger(ctx, json.RawMessage(`{"orderId":"o-4"}`), runtime.WithTags(tc.tags))
				if !errors.Is(err, runtime.ErrInvalidTag) || !strings.Contains(err.Error(), tc.says) || !strings.HasPrefix(err.Error(), "triggering order: ") {
					t.Errorf("Trigger = %v; want ErrInvalidTag saying %q", err, tc.says)
				}
				if after, _ := h.Store.ListRuns(ctx, store.RunQuery{Workflow: "order"}); len(after) != len(before) {
					t.Errorf("a refused trigger created a run")
				}
			})
		}
	})
}
