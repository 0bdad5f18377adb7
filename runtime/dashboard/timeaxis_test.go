package dashboard

import (
	"testing"
	"time"
)

// TestTimeaxis: the axis spans its width in time order, compresses only
// idle stretches longer than all the busy time, and keeps short runs
// linear.
func TestTimeaxis(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	span := func(from, to time.Duration) [2]time.Time { return [2]time.Time{at(from), at(to)} }
	tests := []struct {
		name   string
		end    time.Duration
		busy   [][2]time.Time
		breaks int
	}{
		{"busy throughout", 10 * time.Second, [][2]time.Time{span(0, 4*time.Second), span(4*time.Second, 10*time.Second)}, 0},
		{"a short pause", 10 * time.Second, [][2]time.Time{span(0, 4*time.Second), span(6*time.Second, 10*time.Second)}, 0},
		{"a day's sleep", 24*time.Hour + 8*time.Second, [][2]time.Time{span(0, 6*time.Second), span(24*time.Hour+6*time.Second, 24*time.Hour+8*time.Second)}, 1},
		{"sleeping still", 24*time.Hour + 6*time.Second, [][2]time.Time{span(0, 6*time.Second)}, 1},
		{"two long waits", 50 * time.Hour, [][2]time.Time{span(0, time.Second), span(24*time.Hour, 24*time.Hour+time.Second), span(50*time.Hour-time.Second, 50*time.Hour)}, 2},
		{"instants only", 24 * time.Hour, [][2]time.Time{span(0, 0), span(24*time.Hour, 24*time.Hour)}, 1},
		{"nothing busy", time.Hour, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTimeaxis(t0, at(tt.end), tt.busy, 100, 700)
			if got := len(a.breaks()); got != tt.breaks {
				t.Errorf("%d breaks, want %d: %+v", got, tt.breaks, a.pieces)
			}
			if x := a.x(t0); x != 100 {
				t.Errorf("x(start) = %v, want 100", x)
			}
			if x := a.x(at(tt.end)); x > 800.001 {
				t.Errorf("x(end) = %v, beyond the width", x)
			}
			last := a.x(t0)
			for i := 1; i <= 1000; i++ {
				x := a.x(t0.Add(tt.end * time.Duration(i) / 1000))
				if x < last {
					t.Fatalf("x goes back at %d/1000: %v after %v", i, x, last)
				}
				last = x
			}
			for _, b := range tt.busy {
				if d := b[1].Sub(b[0]); d >= time.Second && a.x(b[1])-a.x(b[0]) < 40 {
					t.Errorf("a busy stretch of %v is drawn %.1f wide", d, a.x(b[1])-a.x(b[0]))
				}
			}
		})
	}
}
