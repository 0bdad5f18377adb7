package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// databaseURL is the test database (TRELLIS_DATABASE_URL, else the local
// server); the test skips when none answers, unless TRELLIS_REQUIRE_DB=1
// (as CI sets), as the repository's own Postgres tests do.
func databaseURL(t *testing.T) string {
	t.Helper()
	url := envOr("TRELLIS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		if os.Getenv("TRELLIS_REQUIRE_DB") == "1" {
			t.Fatalf("no database at %s: %v", url, err)
		}
		t.Skipf("no database at %s: %v", url, err)
	}
	_ = conn.Close(ctx)
	return url
}

// TestBurnDownTiny burns down a few jobs as `make bench-peers` does many,
// so that the peer keeps building and working against the River version
// it pins: every job completes (run waits for each one's completion
// event), the report says so, and the peer's schema is gone afterwards.
func TestBurnDownTiny(t *testing.T) {
	url := databaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, url, 200, 10, 2*time.Millisecond, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RIVER  no-op burn-down, 200 jobs inserted", "MaxWorkers 10", " jobs/s  200 jobs in ", " B of WAL a job", " µs of client CPU"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`,
		fmt.Sprintf("riverpeer_%d", os.Getpid())).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left {
		t.Error("the peer's schema is still there after the burn-down")
	}
}

// TestBadSettings: what a user types is checked, with the flag named.
func TestBadSettings(t *testing.T) {
	for _, tc := range []struct {
		jobs, workers  int
		cooldown, poll time.Duration
		want           string
	}{
		{0, 10, time.Millisecond, time.Millisecond, "-jobs 0"},
		{10, 0, time.Millisecond, time.Millisecond, "-max-workers 0"},
		{10, 1 << 40, time.Millisecond, time.Millisecond, "-max-workers"},
		{10, 10, 0, time.Millisecond, "-fetch-cooldown 0s"},
		{10, 10, time.Millisecond, -time.Second, "-fetch-poll-interval -1s"},
	} {
		if err := validate(tc.jobs, tc.workers, tc.cooldown, tc.poll); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("validate(%d, %d, %v, %v) = %v, want an error with %q", tc.jobs, tc.workers, tc.cooldown, tc.poll, err, tc.want)
		}
	}
	if err := validate(100_000, 2_000, 2*time.Millisecond, 20*time.Millisecond); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}
