package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// Keys of any length: concurrency, rate limit and waitFor keys whose
// values are far longer than a Postgres index entry may be (the store
// keeps a digest of them) behave as short keys do, on both stores.

func TestLongKeysMemory(t *testing.T) { testLongKeys(t, trellistest.New(t)) }

func TestLongKeysPostgres(t *testing.T) {
	testLongKeys(t, trellistest.New(t, trellistest.WithStore(pgstore.New(pgtest.Pool(t)))))
}

// longString is n pseudo-random letters and digits, which Postgres
// cannot compress below its index entry limit as it would a repeated
// character.
func longString(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 27))
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// keyedSpec charges and ships each customer's orders under a rate limit
// and concurrency limits keyed by customer, then waits for the order's
// confirmation, keyed by order.
func keyedSpec() *runtime.WorkflowSpec {
	return &runtime.WorkflowSpec{
		Name: "keyed",
		InputSchema: `{"type":"object","required":["customerId","orderId"],
			"properties":{"customerId":{"type":"string"},"orderId":{"type":"string"}}}`,
		RateLimit:   &runtime.RateLimitSpec{Key: "input.customerId", Limit: 100, Per: time.Second},
		Concurrency: &runtime.ConcurrencySpec{Key: "input.customerId", Max: 2},
		Events:      []runtime.EventSpec{{Name: "confirmed", Schema: `{"type":"object"}`}},
		Steps: []runtime.StepSpec{
			{Name: "charge", Concurrency: &runtime.ConcurrencySpec{Key: "input.customerId", Max: 1}},
			{Name: "ship", Parents: []string{"charge"}},
			{Name: "confirm", Parents: []string{"ship"}, WaitFor: &runtime.WaitForSpec{Event: "confirmed", Key: "input.orderId"}},
		},
	}
}

func keyedHandlers() runtime.Handlers {
	nothing := func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return nil, nil }
	return runtime.Handlers{Steps: map[string]runtime.StepFunc{"charge": nothing, "ship": nothing}}
}

func testLongKeys(t *testing.T, h *trellistest.Harness) {
	ctx := t.Context()
	wf, err := h.Engine.Register(keyedSpec(), keyedHandlers())
	if err != nil {
		t.Fatal(err)
	}
	trigger := func(customer, order string) runtime.RunID {
		t.Helper()
		in, _ := json.Marshal(map[string]string{"customerId": customer, "orderId": order})
		ref, err := wf.Trigger(ctx, in)
		if err != nil {
			t.Fatalf("triggering for a customer id of %d bytes: %v", len(customer), err)
		}
		return ref.ID
	}
	// An order id of 8,000 characters, and another sharing its first 7,999.
	order := longString(1, 8000)
	twin := order[:7999] + "!"
	long := trigger(longString(2, 8000), order)
	other := trigger(longString(3, 8000), twin)
	var ordinary []runtime.RunID
	for i := range 20 {
		ordinary = append(ordinary, trigger(fmt.Sprintf("customer-%d", i), fmt.Sprintf("order-%d", i)))
	}
	h.RunUntilIdle()
	h.Advance(time.Second)
	for _, id := range append([]runtime.RunID{long, other}, ordinary...) {
		if got := h.Steps(id)["confirm"]; got != runtime.TaskWaiting {
			t.Fatalf("run %s: confirm is %s, want WAITING (charge and ship done)", id, got)
		}
	}

	n, err := wf.Send(ctx, "confirmed", order, json.RawMessage(`{"by":"ada"}`))
	if err != nil || n != 1 {
		t.Fatalf("Send with the long order id = %d, %v; want 1 wait woken", n, err)
	}
	for i := range ordinary {
		if _, err := wf.Send(ctx, "confirmed", fmt.Sprintf("order-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	h.RunUntilIdle()
	for _, id := range append([]runtime.RunID{long}, ordinary...) {
		if res := h.Result(id); res.Status != runtime.RunCompleted {
			t.Fatalf("run %s is %s, want COMPLETED", id, res.Status)
		}
	}
	if got := h.Result(long).Outputs["confirm"]; string(got) != `{"by":"ada"}` {
		t.Errorf("the long-keyed wait's output is %s", got)
	}
	// A key that differs only in its last character is another key.
	if got := h.Steps(other)["confirm"]; got != runtime.TaskWaiting {
		t.Errorf("the wait keyed by the twin order id is %s, want still WAITING", got)
	}
	if n, err := wf.Send(ctx, "confirmed", twin, nil); err != nil || n != 1 {
		t.Fatalf("Send with the twin order id = %d, %v; want 1 wait woken", n, err)
	}
	h.RunUntilIdle()
	if res := h.Result(other); res.Status != runtime.RunCompleted {
		t.Errorf("twin run is %s, want COMPLETED", res.Status)
	}
}
