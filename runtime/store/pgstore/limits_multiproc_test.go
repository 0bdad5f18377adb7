package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// limitedSteps log when each step ran, by the database's clock, to
// span_log: a step's span lies inside the time it held its limit's slot
// (from its claim to the record of its result), so spans of tasks that
// share a slot never overlap.
type limitedSteps struct {
	pool   *pgxpool.Pool
	worker string
}

func (s *limitedSteps) span(ctx context.Context, step string, in multiproc.LimitedInput) error {
	info, _ := runtime.InfoFromContext(ctx)
	var start time.Time
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&start); err != nil {
		return err
	}
	select {
	case <-time.After(15 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO span_log (run_id, step, customer, worker, started_at, ended_at)
		VALUES ($1, $2, $3, $4, $5, clock_timestamp())`, info.RunID, step, in.Customer, s.worker, start)
	return err
}

func (s *limitedSteps) Charge(ctx context.Context, in multiproc.LimitedInput) error {
	return s.span(ctx, "charge", in)
}

func (s *limitedSteps) Pack(ctx context.Context, in multiproc.LimitedInput, _ multiproc.LimitedPackParents) error {
	return s.span(ctx, "pack", in)
}

func (s *limitedSteps) Ship(ctx context.Context, in multiproc.LimitedInput, _ multiproc.LimitedShipParents) error {
	return s.span(ctx, "ship", in)
}

func (s *limitedSteps) Bill(ctx context.Context, in multiproc.LimitedInput, _ multiproc.LimitedBillParents) error {
	return s.span(ctx, "bill", in)
}

// TestLimitsHoldAcrossProcesses runs the limited workflow on three worker
// processes and checks, from the spans the steps logged, that no
// customer ever had more than one charge, or more than two of its other
// steps, running at once, while customers ran side by side.
func TestLimitsHoldAcrossProcesses(t *testing.T) {
	c := newCluster(t)
	for i := range 3 {
		c.start(fmt.Sprintf("w%d", i))
	}
	customers := []string{"ada", "bob", "cy", "dee"}
	var inputs []multiproc.LimitedInput
	for range 15 {
		for _, cu := range customers {
			inputs = append(inputs, multiproc.LimitedInput{Customer: cu})
		}
	}
	refs, err := c.limited.RunManyNoWait(t.Context(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	ids := runIDs(refs)
	c.waitDone(ids, 2*time.Minute)

	rows, err := c.pool.Query(t.Context(), `SELECT step, customer, worker, started_at, ended_at FROM span_log`)
	if err != nil {
		t.Fatal(err)
	}
	var spans []logged
	for rows.Next() {
		var sp logged
		if err := rows.Scan(&sp.step, &sp.customer, &sp.worker, &sp.start, &sp.end); err != nil {
			t.Fatal(err)
		}
		spans = append(spans, sp)
	}
	rows.Close()
	if want := len(ids) * 4; len(spans) != want {
		t.Fatalf("logged %d step executions, want %d (each step once)", len(spans), want)
	}
	workers := map[string]bool{}
	for _, sp := range spans {
		workers[sp.worker] = true
	}
	for _, cu := range customers {
		if n := mostAtOnce(spans, func(s logged) bool { return s.customer == cu && s.step == "charge" }); n != 1 {
			t.Errorf("customer %s: %d charges ran at once, want 1 (concurrency max 1)", cu, n)
		}
		if n := mostAtOnce(spans, func(s logged) bool { return s.customer == cu && s.step != "charge" }); n > 2 {
			t.Errorf("customer %s: %d of its packs, ships and bills ran at once, want at most 2 (concurrency max 2)", cu, n)
		}
	}
	all := mostAtOnce(spans, func(s logged) bool { return s.step != "charge" })
	charges := mostAtOnce(spans, func(s logged) bool { return s.step == "charge" })
	t.Logf("%d runs on %d workers; at once across customers: %d charges, %d other steps", len(ids), len(workers), charges, all)
	if charges < 2 {
		t.Errorf("at most %d charges of all customers ran at once; the limit is per customer", charges)
	}
}

// runIDs returns the ids of the runs refs name, in order.
func runIDs(refs []runtime.RunRef) []runtime.RunID {
	ids := make([]runtime.RunID, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	return ids
}

type logged struct {
	step, customer, worker string
	start, end             time.Time
}

// mostAtOnce returns the most spans that overlapped, of those keep
// picks; spans that only touch do not overlap.
func mostAtOnce(spans []logged, keep func(logged) bool) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, sp := range spans {
		if keep(sp) {
			edges = append(edges, edge{sp.start, +1}, edge{sp.end, -1})
		}
	}
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
