package bench

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestPercentiles(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var samples []time.Duration
	for i := 100; i >= 1; i-- { // 1..100 ms, shuffled by reversal
		samples = append(samples, ms(i))
	}
	got := percentiles(samples)
	want := Percentiles{Count: 100, P50: ms(50), P95: ms(95), P99: ms(99), Max: ms(100)}
	if got != want {
		t.Errorf("percentiles(1..100 ms) = %+v, want %+v", got, want)
	}
	if got := percentiles([]time.Duration{ms(7)}); got.P50 != ms(7) || got.P99 != ms(7) || got.Count != 1 {
		t.Errorf("percentiles of one sample = %+v", got)
	}
	if got := percentiles(nil); got != (Percentiles{}) {
		t.Errorf("percentiles(nil) = %+v, want zeros", got)
	}
}

func TestHandoffs(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	r1, r2 := uuid.New(), uuid.New()
	// a -> (b, c) -> d
	parents := [][]int{nil, {0}, {0}, {1, 2}}
	events := []taskEvent{
		{run: r1, step: 0, at: at(0)}, {run: r1, step: 0, resolved: true, at: at(10)},
		{run: r1, step: 1, at: at(12)}, {run: r1, step: 2, at: at(15)},
		{run: r1, step: 2, resolved: true, at: at(20)}, // c skipped or completed first
		{run: r1, step: 1, resolved: true, at: at(30)},
		{run: r1, step: 3, at: at(31)}, // d waits for its latest parent, b
		// r2: b started twice (a retry); only the first start counts. c
		// never resolved, so d (which never started) is left out.
		{run: r2, step: 0, resolved: true, at: at(100)},
		{run: r2, step: 1, at: at(104)}, {run: r2, step: 1, at: at(150)},
		{run: r2, step: 2, at: at(107)},
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name     string
		from, to time.Time
		want     []time.Duration
	}{
		{"all", time.Time{}, time.Time{}, []time.Duration{ms(2), ms(5), ms(1), ms(4), ms(7)}},
		{"window by the child's start", at(14), at(105), []time.Duration{ms(5), ms(1), ms(4)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := handoffs(events, parents, tt.from, tt.to)
			if len(got) != len(tt.want) {
				t.Fatalf("handoffs = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("handoffs = %v, want %v", got, tt.want)
				}
			}
		})
	}
}
