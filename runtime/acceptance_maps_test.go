package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

type ordersSteps struct {
	mu      sync.Mutex
	charged []string
	fail    string // the sku whose charge fails for good
}

func (s *ordersSteps) ChargeLine(_ context.Context, item wf.OrdersChargeLineItem) (wf.OrdersChargeLineOutput, error) {
	if item.SKU == s.fail {
		return wf.OrdersChargeLineOutput{}, runtime.NonRetryable(fmt.Errorf("card declined for %s", item.SKU))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.charged = append(s.charged, item.SKU)
	return wf.OrdersChargeLineOutput{SKU: item.SKU, ChargeID: "ch-" + item.SKU}, nil
}

func (s *ordersSteps) Total(_ context.Context, _ wf.OrdersInput, p wf.OrdersTotalParents) (wf.OrdersTotalOutput, error) {
	return wf.OrdersTotalOutput{Charges: int64(len(p.ChargeLine))}, nil
}

func testMapOrders(t *testing.T, newH newHarness) {
	h := newH(t)
	steps := &ordersSteps{fail: "bad"}
	client, err := wf.RegisterOrders(h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	var lines []wf.OrdersInputLinesItem
	for i := range 25 {
		lines = append(lines, wf.OrdersInputLinesItem{SKU: fmt.Sprintf("sku-%02d", i), Cents: int64(i % 5)})
	}
	res, err := client.Run(t.Context(), wf.OrdersInput{OrderID: "o-1", Lines: lines})
	if err != nil || res.Status != runtime.RunCompleted {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	// Lines of 0 cents are filtered out by the items expression; the
	// outputs come in item order whatever order the items ran in.
	var want []string
	for i := range 25 {
		if i%5 != 0 {
			want = append(want, fmt.Sprintf("sku-%02d", i))
		}
	}
	var got []string
	for _, c := range *res.ChargeLine {
		got = append(got, c.SKU)
	}
	if !slices.Equal(got, want) || res.Total == nil || res.Total.Charges != int64(len(want)) {
		t.Errorf("charge-line = %v, total %+v; want %v", got, res.Total, want)
	}
	if len(steps.charged) != len(want) {
		t.Errorf("charged %d lines, want each of %d once", len(steps.charged), len(want))
	}
	checkTrail(t, h, res.ID, "charge-line", trail(queued, store.EventWaiting, store.EventWoken, completed))

	// An empty list completes the map at once.
	res, err = client.Run(t.Context(), wf.OrdersInput{OrderID: "o-2", Lines: []wf.OrdersInputLinesItem{{SKU: "free", Cents: 0}}})
	if err != nil || res.Status != runtime.RunCompleted || res.ChargeLine == nil || len(*res.ChargeLine) != 0 || res.Total.Charges != 0 {
		t.Fatalf("empty map: %+v, %v", res, err)
	}

	// One item failing for good fails the run, naming the item.
	res, err = client.Run(t.Context(), wf.OrdersInput{OrderID: "o-3", Lines: []wf.OrdersInputLinesItem{
		{SKU: "ok", Cents: 1}, {SKU: "bad", Cents: 1},
	}})
	if res.Status != runtime.RunFailed || res.Failure == nil || res.Failure.Step != "charge-line" ||
		!strings.Contains(res.Failure.Error, "item 1 failed") || !strings.Contains(res.Failure.Error, "card declined for bad") {
		t.Fatalf("failing item: %+v (failure %+v), %v", res, res.Failure, err)
	}
}
