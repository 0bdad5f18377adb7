package runtime_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// The concurrency limits of testdata/acceptance/payments.yaml, on a
// started engine with real time: a customer's charges one at a time, at
// most two of its packs and ships at once, while customers run in
// parallel.

func TestConcurrencyLimitsMemory(t *testing.T) { testConcurrencyLimits(t, memstore.New()) }

func TestConcurrencyLimitsPostgres(t *testing.T) {
	testConcurrencyLimits(t, pgstore.New(pgtest.Pool(t)))
}

// spans records when steps ran, per step and customer.
type spans struct {
	mu   sync.Mutex
	list []span
}

type span struct {
	step, customer string
	start, end     time.Time
}

func (s *spans) run(ctx context.Context, step, customer string) error {
	start := time.Now()
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, span{step: step, customer: customer, start: start, end: time.Now()})
	return nil
}

// most returns the most spans that overlapped, of those keep picks.
func (s *spans) most(keep func(span) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, sp := range s.list {
		if keep(sp) {
			edges = append(edges, edge{sp.start, +1}, edge{sp.end, -1})
		}
	}
	// At equal times an end comes first: touching spans do not overlap.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

type paymentSteps struct{ spans *spans }

func (p *paymentSteps) Charge(ctx context.Context, in wf.PaymentsInput) error {
	return p.spans.run(ctx, "charge", in.Customer)
}

func (p *paymentSteps) Pack(ctx context.Context, in wf.PaymentsInput, _ wf.PaymentsPackParents) error {
	return p.spans.run(ctx, "pack", in.Customer)
}

func (p *paymentSteps) Ship(ctx context.Context, in wf.PaymentsInput, _ wf.PaymentsShipParents) error {
	return p.spans.run(ctx, "ship", in.Customer)
}

func testConcurrencyLimits(t *testing.T, s store.Store) {
	engine, err := runtime.New(runtime.Config{Store: s, Concurrency: 16})
	if err != nil {
		t.Fatal(err)
	}
	rec := &spans{}
	client, err := wf.RegisterPayments(engine, &paymentSteps{spans: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := engine.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	customers := []string{"ada", "bob", "cy"}
	var inputs []wf.PaymentsInput
	for i := range 8 {
		for _, c := range customers {
			inputs = append(inputs, wf.PaymentsInput{Customer: c, Order: int64(i)})
		}
	}
	refs, err := client.RunManyNoWait(t.Context(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]runtime.RunID, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	results, err := client.WaitMany(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Status != runtime.RunCompleted {
			t.Fatalf("run %s ended %s", r.ID, r.Status)
		}
	}
	for _, c := range customers {
		if n := rec.most(func(s span) bool { return s.customer == c && s.step == "charge" }); n != 1 {
			t.Errorf("customer %s: %d charges ran at once, want 1 (concurrency max 1)", c, n)
		}
		if n := rec.most(func(s span) bool { return s.customer == c && s.step != "charge" }); n > 2 {
			t.Errorf("customer %s: %d packs and ships ran at once, want at most 2 (concurrency max 2)", c, n)
		}
	}
	// The limits are per customer: customers' charges ran side by side.
	if n := rec.most(func(s span) bool { return s.step == "charge" }); n < 2 {
		t.Errorf("at most %d charges of all customers ran at once; the limit is per customer", n)
	}
	t.Logf("%d runs; charges at once across customers: %d", len(ids), rec.most(func(s span) bool { return s.step == "charge" }))
}
