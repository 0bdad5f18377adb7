package bench

import (
	"slices"
	"time"
)

// Percentiles summarises a set of durations.
type Percentiles struct {
	// Count is the number of samples.
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P95   time.Duration `json:"p95_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// percentiles returns the nearest-rank percentiles of samples (which it
// sorts); all zero for no samples.
func percentiles(samples []time.Duration) Percentiles {
	if len(samples) == 0 {
		return Percentiles{}
	}
	slices.Sort(samples)
	rank := func(p float64) time.Duration {
		// Nearest rank: the smallest sample with at least p of the
		// samples at or below it.
		i := int(float64(len(samples))*p+0.999999) - 1
		return samples[min(max(i, 0), len(samples)-1)]
	}
	return Percentiles{Count: len(samples), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: samples[len(samples)-1]}
}

// perSecond is n per elapsed second, or zero for no time.
func perSecond(n int, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(n) / elapsed.Seconds()
}
