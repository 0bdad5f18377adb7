package pgstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// A key of any length names a concurrency or rate limit: a run whose key
// is far longer than Postgres indexes hold (8,000 characters) completes,
// and does not hold up the runs triggered after it on the same worker.

// longCustomer is a customer id longer than a b-tree entry may be, even
// compressed (Postgres compresses long index entries, so a repeated
// character would fit).
func longCustomer() string {
	var b strings.Builder
	x := uint32(2463534242)
	for b.Len() < 8000 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[x%36])
	}
	return b.String()
}

func TestLongRateLimitKeyDoesNotStallAWorker(t *testing.T) {
	c := newCluster(t)
	c.start("w0")
	inputs := []multiproc.PacedInput{{Customer: longCustomer()}}
	for i := range 20 {
		inputs = append(inputs, multiproc.PacedInput{Customer: "ordinary-" + string(rune('a'+i))})
	}
	var ids []runtime.RunID
	for _, in := range inputs {
		ref, err := c.paced.RunNoWait(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	c.waitDone(ids, 15*time.Second)
}

func TestLongConcurrencyKeyDoesNotStallAWorker(t *testing.T) {
	c := newCluster(t)
	c.start("w0")
	inputs := []multiproc.LimitedInput{{Customer: longCustomer()}}
	for i := range 20 {
		inputs = append(inputs, multiproc.LimitedInput{Customer: "ordinary-" + string(rune('a'+i))})
	}
	var ids []runtime.RunID
	for _, in := range inputs {
		ref, err := c.limited.RunNoWait(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	c.waitDone(ids, 15*time.Second)
}
