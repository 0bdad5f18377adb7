package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func sampleResults() *Results {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	return &Results{
		Started:     time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC),
		Environment: Environment{GoVersion: "go1.26", OS: "linux", Arch: "amd64", CPUs: 2, Postgres: "15.2", Database: "localhost/test"},
		Sizes:       Sizes{Runs: 100, SteadyDuration: 4 * time.Second, SteadyWarmup: time.Second, MaxBacklog: 2000, LatencyRuns: 200},
		Throughput: []Throughput{
			{Store: StorePostgres, Workflow: ChainLabel, Mode: ModeBurnDown, Workers: 2, Runs: 100, Tasks: 500, Elapsed: time.Second, TasksPerSec: 500, RunsPerSec: 100, InsertedPerSec: 9000, WALPerTask: 2048, DBCPUPerTask: 95 * time.Microsecond},
			{Store: StorePostgres, Workflow: DiamondLabel, Mode: ModeSteady, Workers: 4, Runs: 300, Tasks: 1800, Elapsed: 3 * time.Second, TasksPerSec: 600, RunsPerSec: 100,
				Notes: []string{"bench-1: level=ERROR msg=boom"}},
			{Store: StoreMemory, Workflow: ChainLabel, Mode: ModeBurnDown, Runs: 1000, Tasks: 5000, Elapsed: ms(50), TasksPerSec: 100000, RunsPerSec: 20000},
		},
		Latency: []Latency{{Case: LatencyIdle, Workflow: ChainLabel, Workers: 1, Handoffs: Percentiles{Count: 800, P50: ms(2), P95: ms(3), P99: ms(4), Max: ms(9)},
			EndToEnd: Percentiles{Count: 200, P50: ms(5), P95: ms(7), P99: ms(8), Max: ms(11)}}},
		Fairness: &Fairness{
			Lone:   LoneTenant{Backlog: 10000, Workers: 2, TasksAhead: 3, ClaimsAhead: 1, Wait: ms(2), Waiting: 9000},
			Shared: SharedBacklog{Tenants: 2, RunsPerTenant: 10, Workers: 2, Elapsed: time.Second, FirstHalf: 10, Shares: []TenantShare{{"tenant-1", 5, 0.5}, {"tenant-2", 5, 0.5}}},
		},
		Sleep:  &Sleep{Sleepers: 1000, Sleep: 30 * time.Second, IdleGoroutines: 10, AsleepGoroutines: 10, IdleHeap: 1 << 20, AsleepHeap: 2 << 20, TableBytes: 1 << 20, BytesPerRun: 1048.576},
		Errors: []string{"sleep: it broke"},
	}
}

func TestReportSaysEveryFigure(t *testing.T) {
	var b bytes.Buffer
	Report(&b, sampleResults())
	// Compare with runs of spaces collapsed: the columns' widths are the
	// table's business.
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"PostgreSQL 15.2 at localhost/test",
		"postgres chain-5 burn-down 2 500 100 500 100 1.00 s inserted at 9,000 runs/s; 2.0 KiB of WAL a task, 95 µs of database CPU",
		"memory chain-5 burn-down in-proc 100,000 20,000",
		"bench-1: level=ERROR msg=boom",
		"idle chain-5 1 800 2.00 ms 3.00 ms 4.00 ms 9.00 ms",
		"tasks ahead 3 tasks", "claims ahead 1 claims", "tenant-2 50.0%",
		"1.0 KiB per run", "1.0 MiB -> 2.0 MiB",
		"FAILED", "sleep: it broke",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	var b bytes.Buffer
	want := sampleResults()
	if err := WriteJSON(&b, want); err != nil {
		t.Fatal(err)
	}
	var got Results
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Throughput[1].Notes[0] != want.Throughput[1].Notes[0] || got.Latency[0].Handoffs != want.Latency[0].Handoffs ||
		got.Fairness.Shared.Shares[1] != want.Fairness.Shared.Shares[1] || got.Sleep.BytesPerRun != want.Sleep.BytesPerRun {
		t.Errorf("JSON did not round-trip:\n%s", b.String())
	}
	if !strings.Contains(b.String(), `"p50_ns": 2000000`) {
		t.Errorf("durations should be in nanoseconds with a _ns name:\n%s", b.String())
	}
}
