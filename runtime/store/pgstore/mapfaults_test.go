package pgstore_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// bulkSteps is the code of the bulk workflow: each item journals its
// execution and works for a while, so that kills catch items in flight.
type bulkSteps struct{ rec *recorder }

func (s *bulkSteps) Each(ctx context.Context, item multiproc.BulkEachItem) (multiproc.BulkEachOutput, error) {
	if err := s.rec.record(ctx); err != nil {
		return multiproc.BulkEachOutput{}, err
	}
	select {
	case <-time.After(20 * time.Millisecond):
	case <-ctx.Done():
		return multiproc.BulkEachOutput{}, ctx.Err()
	}
	return multiproc.BulkEachOutput{N: int64(item)}, nil
}

func (s *bulkSteps) Sum(ctx context.Context, in multiproc.BulkInput, p multiproc.BulkSumParents) (multiproc.BulkSumOutput, error) {
	if err := s.rec.record(ctx); err != nil {
		return multiproc.BulkSumOutput{}, err
	}
	out := multiproc.BulkSumOutput{Count: int64(len(p.Each)), InOrder: len(p.Each) == len(in.Items)}
	for i, e := range p.Each {
		out.Total += e.N
		out.InOrder = out.InOrder && i < len(in.Items) && e.N == in.Items[i]
	}
	return out, nil
}

const bulkItems = 1000

// startBulk starts a bulk run over 1,000 items (i*7 % 1000, so that an
// out-of-order fan-in shows) and waits until at least n items have run.
func (c *cluster) startBulk(n int) (runtime.RunID, multiproc.BulkInput) {
	c.t.Helper()
	in := multiproc.BulkInput{Items: make([]int64, bulkItems)}
	for i := range in.Items {
		in.Items[i] = int64(i * 7 % bulkItems)
	}
	ref, err := c.bulk.RunNoWait(c.t.Context(), in)
	if err != nil {
		c.t.Fatal(err)
	}
	eventually(c.t, "the map is under way", func() bool {
		var ran int
		err := c.pool.QueryRow(c.t.Context(), `SELECT count(*) FROM exec_log WHERE step = 'each'`).Scan(&ran)
		return err == nil && ran >= n
	})
	return ref.ID, in
}

// freezeAndKill stops workers (SIGSTOP), reads the item tasks they hold
// leases on once the database has applied whatever they had sent, and
// kills them (SIGKILL): the tasks that were in flight in them, exactly.
func (c *cluster) freezeAndKill(names ...string) map[uuid.UUID]bool {
	c.t.Helper()
	var workers []string
	for _, name := range names {
		if err := c.workers[name].Process.Signal(syscall.SIGSTOP); err != nil {
			c.t.Fatal(err)
		}
		workers = append(workers, name)
	}
	time.Sleep(200 * time.Millisecond)
	rows, err := c.pool.Query(c.t.Context(), `SELECT l.run_id FROM trellis_leases l
		JOIN trellis_runs r ON r.id = l.run_id WHERE l.worker = ANY ($1) AND r.workflow = 'bulk/each'`, workers)
	if err != nil {
		c.t.Fatal(err)
	}
	held := map[uuid.UUID]bool{}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			c.t.Fatal(err)
		}
		held[id] = true
	}
	rows.Close()
	for _, name := range names {
		c.kill9(name)
	}
	return held
}

// checkBulk checks a bulk run after kills: it completed with every item's
// output in item order; every item ran; the items that ran more than
// once were in flight in a killed worker, and ran twice at most.
func (c *cluster) checkBulk(id runtime.RunID, in multiproc.BulkInput, held map[uuid.UUID]bool) {
	t := c.t
	res, err := c.bulk.Wait(t.Context(), id)
	if err != nil || res.Sum == nil {
		t.Fatalf("bulk run: %+v, %v", res, err)
	}
	var total int64
	for _, n := range in.Items {
		total += n
	}
	if res.Sum.Count != bulkItems || res.Sum.Total != total || !res.Sum.InOrder {
		t.Errorf("sum = %+v, want %d items totalling %d, in item order", *res.Sum, bulkItems, total)
	}
	rows, err := c.pool.Query(t.Context(), `
		SELECT r.id, r.parent_index, count(x.run_id)
		FROM trellis_runs r LEFT JOIN exec_log x ON x.run_id = r.id
		WHERE r.parent_run_id = $1
		GROUP BY r.id, r.parent_index`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	items, again := 0, 0
	for rows.Next() {
		var item uuid.UUID
		var index, ran int
		if err := rows.Scan(&item, &index, &ran); err != nil {
			t.Fatal(err)
		}
		items++
		switch {
		case ran == 0:
			t.Errorf("item %d (run %s) never ran", index, item)
		case ran > 1 && !held[item]:
			t.Errorf("item %d (run %s) ran %d times, but no killed worker held it", index, item, ran)
		case ran > 2:
			t.Errorf("item %d (run %s) ran %d times", index, item, ran)
		case ran == 2:
			again++
		}
	}
	if items != bulkItems {
		t.Errorf("%d item runs, want %d: a map's items are created once", items, bulkItems)
	}
	var sums int
	if err := c.pool.QueryRow(t.Context(), `SELECT count(*) FROM exec_log WHERE run_id = $1 AND step = 'sum'`, id).Scan(&sums); err != nil || sums != 1 {
		t.Errorf("sum ran %d times, want once (%v)", sums, err)
	}
	t.Logf("%d items: %d were in flight in the killed workers, %d of which ran again", bulkItems, len(held), again)
}

// TestMapSurvivesKilledLeader kills the leader with SIGKILL in the middle
// of a 1,000-item map: exactly the items it had in flight run again, on
// the other worker, which takes the lead and recovers them.
func TestMapSurvivesKilledLeader(t *testing.T) {
	c := newCluster(t)
	c.start("w0")
	c.start("w1")
	var leader string
	eventually(t, "a worker leads", func() bool { leader = c.leader(); return leader != "" })
	id, in := c.startBulk(200)
	held := c.freezeAndKill(leader)
	if len(held) == 0 {
		t.Fatalf("the killed leader held no item in flight; the test did not test a kill mid-map")
	}
	c.checkBulk(id, in, held)
}

// TestMapSurvivesAllWorkersKilled kills every worker in the middle of a
// 1,000-item map, then starts new ones: the map goes on from where it
// was, running again only the items that were in flight.
func TestMapSurvivesAllWorkersKilled(t *testing.T) {
	c := newCluster(t)
	c.start("w0")
	c.start("w1")
	id, in := c.startBulk(300)
	held := c.freezeAndKill("w0", "w1")
	if len(held) == 0 {
		t.Fatalf("the killed workers held no item in flight; the test did not test a kill mid-map")
	}
	c.start("w2")
	c.start("w3")
	c.checkBulk(id, in, held)
}
