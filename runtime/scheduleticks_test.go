package runtime_test

import (
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
)

func TestScheduleTicksLastAndNext(t *testing.T) {
	now := time.Date(2026, 3, 10, 14, 7, 30, 0, time.UTC)
	for _, tc := range []struct {
		cron, tz   string
		last, next string
	}{
		{"*/15 * * * *", "", "2026-03-10T14:00:00Z", "2026-03-10T14:15:00Z"},
		{"@every 10m", "", "2026-03-10T14:00:00Z", "2026-03-10T14:10:00Z"},
		{"0 9 * * 1", "", "2026-03-09T09:00:00Z", "2026-03-16T09:00:00Z"},
		{"0 0 1 1 *", "", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"0 9 * * *", "Europe/Paris", "2026-03-10T08:00:00Z", "2026-03-11T08:00:00Z"},
	} {
		last, next, err := runtime.ScheduleTicks(runtime.Schedule{Name: "s", Cron: tc.cron, Timezone: tc.tz}, now)
		if err != nil {
			t.Fatalf("%s: %v", tc.cron, err)
		}
		if got := last.Format(time.RFC3339); got != tc.last {
			t.Errorf("%s in %q: last tick %s, want %s", tc.cron, tc.tz, got, tc.last)
		}
		if got := next.Format(time.RFC3339); got != tc.next {
			t.Errorf("%s in %q: next tick %s, want %s", tc.cron, tc.tz, got, tc.next)
		}
	}
	if _, _, err := runtime.ScheduleTicks(runtime.Schedule{Cron: "61 * * * *"}, now); err == nil {
		t.Error("a bad cron expression: no error")
	}
	if got := runtime.ScheduleRunKey("nightly", time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)); got != "trellis:schedule:nightly:2026-03-10T00:00:00Z" {
		t.Errorf("ScheduleRunKey = %q", got)
	}
}
