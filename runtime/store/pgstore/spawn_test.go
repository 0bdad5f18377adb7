package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// countingTracer counts the statements the pool runs.
type countingTracer struct{ n atomic.Int64 }

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestSpawnStatementsDoNotGrowWithItems records a map step's spawn of 10
// and of 10,000 item runs: one transaction of the same few statements
// either way, so that a large map is created in one go.
func TestSpawnStatementsDoNotGrowWithItems(t *testing.T) {
	tracer := &countingTracer{}
	s := pgstore.New(tracedPool(t, tracer))
	ctx := t.Context()
	now := time.Now()
	spawn := func(items int) int64 {
		t.Helper()
		id := uuid.Must(uuid.NewV7())
		_, err := s.CreateRuns(ctx, store.CreateRuns{Now: now, Runs: []store.NewRun{{
			ID: id, Workflow: "m", Version: "m@1", Tenant: "t", Input: []byte(`{}`),
			Tasks: []store.NewTask{{Step: 0, Kind: store.KindMap, MaxAttempts: 1}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := s.ClaimTasks(ctx, store.Claim{Worker: "w", Limit: 1, Versions: []string{"m@1"}, Now: now})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claimed %v, %v", claimed, err)
		}
		sp := store.Spawn{Attempt: store.Attempt{Key: claimed[0].Key, Attempt: claimed[0].Attempt}}
		for i := range items {
			sp.Runs = append(sp.Runs, store.NewRun{
				ID: uuid.Must(uuid.NewV7()), Workflow: "m/each", Version: "m/each@1", Tenant: "t", Input: fmt.Appendf(nil, "%d", i),
				Parent: &store.ParentRun{Index: i}, Tasks: []store.NewTask{{Step: 0, Kind: store.KindCode, Plain: true, MaxAttempts: 1}},
			})
		}
		before := tracer.n.Load()
		if res, err := s.Finish(ctx, store.Results{Now: now, Spawns: []store.Spawn{sp}}); err != nil || len(res.Stale) > 0 {
			t.Fatalf("Finish = %+v, %v", res, err)
		}
		return tracer.n.Load() - before
	}
	small, large := spawn(10), spawn(10_000)
	if small != large || large > 8 {
		t.Errorf("spawning 10 items ran %d statements, 10,000 items %d: want the same few", small, large)
	}
	t.Logf("a spawn runs %d statements, for 10 items or 10,000", large)
}
