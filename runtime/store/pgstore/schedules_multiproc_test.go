package pgstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// TestScheduleTicksOnceAcrossProcesses runs three worker processes that
// all registered the ping workflow, creates a schedule of it ticking every
// second through the API (from the test process, which fires nothing),
// kills one worker with SIGKILL mid-way, and checks from the database
// that each tick started exactly one run, with no tick missing from the
// first to the last, before and after the kill.
func TestScheduleTicksOnceAcrossProcesses(t *testing.T) {
	c := newCluster(t)
	for i := range 3 {
		c.start(fmt.Sprintf("w%d", i))
	}
	ctx := t.Context()
	const name = "every-second"
	if _, err := c.ping.CreateSchedule(ctx, name, "@every 1s", multiproc.PingInput{}); err != nil {
		t.Fatal(err)
	}
	prefix := "trellis:schedule:" + name + ":"

	// ticks returns the ticks that started a run, and how many runs each
	// started (the store's unique key allows one; this reads them all).
	ticks := func() map[time.Time]int {
		rows, err := c.pool.Query(ctx, `SELECT idempotency_key FROM trellis_runs WHERE workflow = 'ping' AND idempotency_key LIKE $1 || '%'`, prefix)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[time.Time]int{}
		for rows.Next() {
			var key string
			if err := rows.Scan(&key); err != nil {
				t.Fatal(err)
			}
			at, err := time.Parse(time.RFC3339, strings.TrimPrefix(key, prefix))
			if err != nil {
				t.Fatalf("key %q: %v", key, err)
			}
			out[at]++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	latest := func(m map[time.Time]int) time.Time {
		var last time.Time
		for at := range m {
			if at.After(last) {
				last = at
			}
		}
		return last
	}

	eventually(t, "three ticks started runs", func() bool { return len(ticks()) >= 3 })
	c.kill9("w1")
	killedAt := time.Now().UTC().Truncate(time.Second)
	eventually(t, "three ticks after the kill started runs", func() bool {
		return latest(ticks()).After(killedAt.Add(3 * time.Second))
	})
	// Stop the schedule, and wait until the workers have noticed and no
	// trigger is in flight (the set of ticks stays the same for a second),
	// so that a tick still being written cannot pass for a missed one.
	if _, err := c.ping.PauseSchedule(ctx, name); err != nil {
		t.Fatal(err)
	}
	got := ticks()
	eventually(t, "the workers stopped firing", func() bool {
		time.Sleep(time.Second)
		now := ticks()
		settled := len(now) == len(got)
		got = now
		return settled
	})
	var first, last time.Time
	for at, n := range got {
		if n != 1 {
			t.Errorf("tick %s started %d runs, want 1", at.Format(time.RFC3339), n)
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	for at := first; !at.After(last); at = at.Add(time.Second) {
		if got[at] == 0 {
			t.Errorf("tick %s started no run (ticks from %s to %s)", at.Format(time.RFC3339), first.Format(time.TimeOnly), last.Format(time.TimeOnly))
		}
	}
	if !first.Before(killedAt) || !last.After(killedAt) {
		t.Errorf("ticks from %s to %s do not span the kill at %s", first, last, killedAt)
	}
	t.Logf("%d ticks, %s to %s, one run each; w1 killed at %s", len(got), first.Format(time.TimeOnly), last.Format(time.TimeOnly), killedAt.Format(time.TimeOnly))
}
