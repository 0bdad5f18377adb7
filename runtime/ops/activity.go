package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
)

// MaxActivityBuckets bounds how many buckets Activity counts in one
// window.
const MaxActivityBuckets = 1440

// Activity is how many runs were created and finished over a recent
// window, a bucket at a time, and how many run now: what a dashboard
// charts as throughput.
type Activity struct {
	// From and To bound the window (To exclusive); Bucket is each
	// bucket's length.
	From   time.Time     `json:"from"`
	To     time.Time     `json:"to"`
	Bucket time.Duration `json:"bucket"`
	// Buckets are in time order, one per Bucket of the window.
	Buckets []ActivityBucket `json:"buckets"`
	// Running is how many runs are RUNNING now.
	Running int `json:"running"`
}

// ActivityBucket counts the runs of one bucket of an Activity window.
type ActivityBucket struct {
	Start time.Time `json:"start"`
	// Created counts the runs created in the bucket.
	Created int `json:"created"`
	// Completed, Failed and Cancelled count the runs that finished in
	// the bucket and are in that status now (a failed run that was
	// retried since counts where it finishes again).
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// Finished is how many runs finished in the bucket, whatever their status.
func (b ActivityBucket) Finished() int { return b.Completed + b.Failed + b.Cancelled }

// Totals adds up the buckets of the window.
func (a *Activity) Totals() ActivityBucket {
	t := ActivityBucket{Start: a.From}
	for _, b := range a.Buckets {
		t.Created += b.Created
		t.Completed += b.Completed
		t.Failed += b.Failed
		t.Cancelled += b.Cancelled
	}
	return t
}

// Activity counts the runs created and finished over the last window, in
// buckets of bucket, and the runs running now. The window ends at the end
// of the bucket holding the engine clock's now, and buckets start at
// multiples of bucket (since the Unix epoch), so that windows read a few
// seconds apart share their buckets. window must be a positive multiple
// of bucket, at most MaxActivityBuckets of them.
func (a *Admin) Activity(ctx context.Context, window, bucket time.Duration) (*Activity, error) {
	if bucket <= 0 || window <= 0 || window%bucket != 0 {
		return nil, fmt.Errorf("activity window %v: give a positive multiple of the bucket (%v)", window, bucket)
	}
	n := int(window / bucket)
	if n > MaxActivityBuckets {
		return nil, fmt.Errorf("activity window %v holds %d buckets of %v: at most %d", window, n, bucket, MaxActivityBuckets)
	}
	to := a.engine.Clock().Now().UTC().Truncate(bucket).Add(bucket)
	q := store.ActivityQuery{From: to.Add(-window), Bucket: bucket, Buckets: n}
	got, err := a.store.RunActivity(ctx, q)
	if err != nil {
		return nil, err
	}
	out := &Activity{From: q.From, To: to, Bucket: bucket, Buckets: make([]ActivityBucket, len(got.Buckets)), Running: got.Running}
	for i, b := range got.Buckets {
		out.Buckets[i] = ActivityBucket{
			Start: b.Start.UTC(), Created: b.Created, Completed: b.Completed, Failed: b.Failed, Cancelled: b.Cancelled,
		}
	}
	return out, nil
}

// EventCounts returns how many events each run's log holds (an unknown id
// has no entry): one cheap read for many runs. The count moves whenever a
// run or one of its steps changes, so a page showing runs polls this and
// reads a run again only when its count moved.
func (a *Admin) EventCounts(ctx context.Context, ids ...runtime.RunID) (map[runtime.RunID]int, error) {
	return a.store.EventCounts(ctx, ids)
}
