package main

import (
	"bytes"
	"context"
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

// TestBurnDownTiny burns down a few workflows of each shape as `make
// bench-peers` does many, so that the peer keeps building and working
// against the DBOS version it pins: every workflow succeeds, every step
// is checkpointed once (burnDown checks it), the report says so, and the
// peer's schema is gone afterwards.
func TestBurnDownTiny(t *testing.T) {
	url := databaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := config{url: url, workflows: 50, concurrency: 10, poll: 2 * time.Millisecond, maxConns: 5, stall: time.Minute}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		shape     string
		stepsEach int
	}{{chainLabel, 5}, {diamondLabel, 6}} {
		t.Run(tc.shape, func(t *testing.T) {
			res, err := burnDown(ctx, c, tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			if want := c.workflows * tc.stepsEach; res.steps != want || res.checkpoints != want {
				t.Errorf("%d steps, %d checkpointed; want %d", res.steps, res.checkpoints, want)
			}
			if res.elapsed <= 0 || res.wal <= 0 || res.clientCPU <= 0 {
				t.Errorf("elapsed %v, %d B of WAL, client CPU %v: want all positive", res.elapsed, res.wal, res.clientCPU)
			}
			var out bytes.Buffer
			report(&out, c, res)
			for _, want := range []string{"DBOS   " + tc.shape + " burn-down, 50 workflows", "worker concurrency 10, queue poll 2ms", "a pool of 5 connections", " steps/s ", " workflows/s "} {
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
				res.schema).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left {
				t.Error("the peer's schema is still there after the burn-down")
			}
		})
	}
}

// TestBadSettings: what a user types is checked, with the flag named.
func TestBadSettings(t *testing.T) {
	good := config{url: "postgres://x", workflows: 1, concurrency: 1, poll: time.Millisecond, stall: time.Second}
	for _, tc := range []struct {
		name string
		edit func(*config)
		want string
	}{
		{"no workflows", func(c *config) { c.workflows = 0 }, "-workflows 0"},
		{"huge concurrency", func(c *config) { c.concurrency = 1 << 40 }, "-concurrency"},
		{"zero poll", func(c *config) { c.poll = 0 }, "-poll 0s"},
		{"negative pool", func(c *config) { c.maxConns = -1 }, "-max-conns -1"},
	} {
		c := good
		tc.edit(&c)
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	if err := good.validate(); err != nil {
		t.Errorf("good settings: %v", err)
	}
	_, err := burnDown(context.Background(), good, "chain-"+strings.Repeat("5", 10))
	if err == nil || !strings.Contains(err.Error(), "no shape") {
		t.Errorf("unknown shape: got %v, want \"no shape\"", err)
	}
	if _, err := withMaxConns("host=x dbname=y", 5); err == nil {
		t.Error("-max-conns with a key=value connection string: no error")
	}
}
