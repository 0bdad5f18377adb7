package bench

import "testing"

func TestPostgresTicks(t *testing.T) {
	for _, c := range []struct {
		stat     string
		ticks    int64
		postgres bool
	}{
		{"2207 (postgres) S 1 2207 2207 0 -1 4194304 210359 21332577 0 878 511 2163 213846 80298 20 0 1 0", 511 + 2163 + 213846 + 80298, true},
		{"4242 (trellis) R 1 4242 4242 0 -1 0 0 0 0 0 90 10 0 0 20 0 1 0", 0, false},
		// A name with spaces and a parenthesis is not postgres, and does
		// not shift the fields.
		{"77 (post gres)) S 1 77 77 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0", 0, false},
	} {
		ticks, postgres, err := postgresTicks([]byte(c.stat))
		if err != nil || ticks != c.ticks || postgres != c.postgres {
			t.Errorf("postgresTicks(%q) = %d, %v, %v; want %d, %v", c.stat, ticks, postgres, err, c.ticks, c.postgres)
		}
	}
	if _, _, err := postgresTicks([]byte("1 (postgres) S 1 2")); err == nil {
		t.Error("a short postgres line gave no error")
	}
}
