package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// pacedSteps call nothing: what counts is when the claims started them,
// which the event log records.
type pacedSteps struct{}

func (pacedSteps) Call(context.Context, multiproc.PacedInput) error { return nil }

// TestRateLimitsHoldAcrossProcesses runs the paced workflow (20 calls a
// second per customer) on three worker processes and checks, from the
// STARTED events the claims wrote, that no customer's calls ever ran
// ahead of the pace: its n-th call started no sooner than n intervals of
// 50 ms after its first (no task starts before its turn, and turns are
// 50 ms apart), while customers ran side by side.
func TestRateLimitsHoldAcrossProcesses(t *testing.T) {
	c := newCluster(t)
	for i := range 3 {
		c.start(fmt.Sprintf("w%d", i))
	}
	customers := []string{"ada", "bob", "cy"}
	const perCustomer = 30
	var inputs []multiproc.PacedInput
	for range perCustomer {
		for _, cu := range customers {
			inputs = append(inputs, multiproc.PacedInput{Customer: cu})
		}
	}
	refs, err := c.paced.RunManyNoWait(t.Context(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	ids := runIDs(refs)
	c.waitDone(ids, 2*time.Minute)

	rows, err := c.pool.Query(t.Context(), `
		SELECT r.input->>'customer', e.at, l.worker
		FROM trellis_event_log e
		JOIN trellis_runs r ON r.id = e.run_id
		LEFT JOIN trellis_tasks l ON l.run_id = e.run_id AND l.step = e.step
		WHERE r.workflow = 'paced' AND e.type = 'STARTED'`)
	if err != nil {
		t.Fatal(err)
	}
	starts := map[string][]time.Time{}
	workers := map[string]bool{}
	for rows.Next() {
		var customer string
		var at time.Time
		var worker *string
		if err := rows.Scan(&customer, &at, &worker); err != nil {
			t.Fatal(err)
		}
		starts[customer] = append(starts[customer], at)
		if worker != nil {
			workers[*worker] = true
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	const interval = 50 * time.Millisecond // 1s / 20
	var firsts []time.Time
	for _, cu := range customers {
		list := starts[cu]
		if len(list) != perCustomer {
			t.Fatalf("customer %s: %d calls started, want %d (each once)", cu, len(list), perCustomer)
		}
		slices.SortFunc(list, time.Time.Compare)
		closest := time.Hour
		for i := 1; i < len(list); i++ {
			closest = min(closest, list[i].Sub(list[i-1]))
			if ahead := list[i].Sub(list[0]); ahead < time.Duration(i)*interval {
				t.Errorf("customer %s: call %d started %s after the first, ahead of the pace (%s)", cu, i, ahead, time.Duration(i)*interval)
			}
		}
		firsts = append(firsts, list[0])
		t.Logf("customer %s: %d calls over %s, closest %s apart: %v", cu, len(list), list[len(list)-1].Sub(list[0]), closest, offsets(list))
	}
	// Customers are paced apart: each one's first call went at once.
	slices.SortFunc(firsts, time.Time.Compare)
	if spread := firsts[len(firsts)-1].Sub(firsts[0]); spread > time.Second {
		t.Errorf("the customers' first calls started %s apart; the limit is per customer", spread)
	}
	t.Logf("%d runs on %d workers", len(ids), len(workers))
}

// offsets returns the times after the first, rounded to milliseconds.
func offsets(list []time.Time) []time.Duration {
	out := make([]time.Duration, len(list))
	for i, at := range list {
		out[i] = at.Sub(list[0]).Round(time.Millisecond)
	}
	return out
}
