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
// window, a bucket at a time, and how many run now: the store's record
// (store.Activity), with its times in UTC.
type Activity = store.Activity

// ActivityBucket counts the runs of one bucket of an Activity window.
type ActivityBucket = store.ActivityBucket

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
	got.From, got.To = got.From.UTC(), got.To.UTC()
	for i := range got.Buckets {
		got.Buckets[i].Start = got.Buckets[i].Start.UTC()
	}
	return &got, nil
}

// EventCounts returns how many events each run's log holds (an unknown id
// has no entry): one cheap read for many runs. The count moves whenever a
// run or one of its steps changes, so a page showing runs polls this and
// reads a run again only when its count moved.
func (a *Admin) EventCounts(ctx context.Context, ids ...runtime.RunID) (map[runtime.RunID]int, error) {
	return a.store.EventCounts(ctx, ids)
}
