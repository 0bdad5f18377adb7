package pgstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// A task whose own data makes its claim fail (here a rate limit key too
// long for the index of trellis_rates, SQLSTATE 54000, as a row written
// before keys were digested can hold) is claimed bare, with the reason,
// for the engine to fail it; the tasks around it are claimed as ever, in
// one claim, capped or not.
func TestClaimQuarantinesATaskItsDataBreaks(t *testing.T) {
	for _, capped := range []bool{false, true} {
		name := "uncapped"
		if capped {
			name = "capped"
		}
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := pgstore.New(pgtest.Pool(t))
			now := time.Now()
			newRun := func(key string) store.NewRun {
				return store.NewRun{ID: uuid.Must(uuid.NewV7()), Workflow: "paced", Version: "paced@v1", Tenant: "t", Input: []byte(`{}`),
					Tasks: []store.NewTask{{Step: 0, Kind: store.KindCode, MaxAttempts: 3, Plain: true,
						Rate: store.Rate{Key: key, Interval: time.Millisecond, Burst: 1000}}}}
			}
			// Random, so that Postgres cannot compress it under the limit.
			var key strings.Builder
			for key.Len() < 8000 {
				key.WriteString(uuid.NewString())
			}
			poison := newRun(key.String())
			runs := []store.NewRun{newRun("a"), poison, newRun("b"), newRun("c")}
			if _, err := s.CreateRuns(ctx, store.CreateRuns{Runs: runs, Now: now}); err != nil {
				t.Fatal(err)
			}
			claim := store.Claim{Worker: "w", Limit: 10, Now: now}
			if capped {
				claim.TenantLimit = 10
			}
			got, err := s.ClaimTasks(ctx, claim)
			if err != nil {
				t.Fatalf("ClaimTasks: %v", err)
			}
			if len(got) != 4 {
				t.Fatalf("claimed %d tasks, want all 4: %+v", len(got), got)
			}
			for _, c := range got {
				refused := c.Key.Run == poison.ID
				if refused != (c.Refused != "") {
					t.Errorf("run %s: Refused = %q", c.Key.Run, c.Refused)
				}
				if refused && !strings.Contains(c.Refused, "54000") {
					t.Errorf("Refused = %q, want the database's reason", c.Refused)
				}
				if refused && strings.Contains(c.Refused, key.String()[:36]) {
					t.Errorf("Refused quotes the key: %q", c.Refused)
				}
				if c.Plain != !refused {
					t.Errorf("run %s: Plain = %v; the bare claim writes no STARTED event", c.Key.Run, c.Plain)
				}
			}
			// The next claim finds the queue empty: nothing is left to fail
			// again.
			if more, err := s.ClaimTasks(ctx, claim); err != nil || len(more) != 0 {
				t.Errorf("second claim = %v, %v", more, err)
			}
		})
	}
}
