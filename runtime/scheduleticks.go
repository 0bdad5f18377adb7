package runtime

import (
	"time"
)

// maxTickLookBack bounds how far back ScheduleTicks looks for a
// schedule's latest tick.
const maxTickLookBack = 2 * 366 * 24 * time.Hour

// ScheduleTicks returns the latest tick of s at or before now (zero when
// none came in the two years before now) and its first tick after now,
// reading its cron expression in its time zone as engines do (@every d
// ticks at whole multiples of d). It says nothing of whether s is paused
// or whether a run was started at the tick: the run a tick started has
// the idempotency key ScheduleRunKey(s.Name, tick). A cron expression or
// time zone that engines would refuse is an error.
func ScheduleTicks(s Schedule, now time.Time) (last, next time.Time, err error) {
	c, loc, err := parseCron(s.Cron, s.Timezone)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	at := now.In(loc)
	next = c.Next(at)
	// Look back over a window that doubles until it holds a tick; within
	// it, the last tick not after now is the latest.
	for back := 2 * time.Minute; back <= maxTickLookBack*2; back *= 2 {
		for t := c.Next(at.Add(-back)); !t.IsZero() && !t.After(at); t = c.Next(t) {
			last = t
		}
		if !last.IsZero() {
			return last.UTC(), next.UTC(), nil
		}
	}
	return time.Time{}, next.UTC(), nil
}

// ScheduleRunKey is the idempotency key of the run the schedule named
// starts at tick: how to find the run a tick started.
func ScheduleRunKey(name string, tick time.Time) string { return scheduleKey(name, tick) }
