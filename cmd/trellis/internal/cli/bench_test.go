package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/bench"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// TestMain lets trellis bench re-execute the test binary as its worker
// processes: bench starts os.Executable() with "bench worker ...".
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "bench" && os.Args[2] == benchWorkerArg {
		os.Exit(Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestBenchUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bench", "-workers", "1,x"}, `"x" is not a whole number`},
		{[]string{"bench", "-scenarios", "throughput,speed"}, `unknown scenario "speed"`},
		{[]string{"bench", "-runs", "0"}, "runs must be positive"},
		{[]string{"bench", "-database-url", "", "-scenarios", "latency"}, "no database"},
		{[]string{"bench", "now"}, "unexpected arguments"},
		{[]string{"bench", "worker", "-database-url", "postgres://x"}, "no schema"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		if code := Main(t.Context(), tt.args, &out, &errOut); code != ExitUsage || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("%v = %d %q, want usage error %q", tt.args, code, errOut.String(), tt.want)
		}
	}
}

func TestHelpListsBenchButNotItsWorker(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(t.Context(), []string{"help"}, &out, &errOut); code != ExitOK {
		t.Fatalf("help = %d", code)
	}
	// (trellis workers is a command of its own; bench's worker is not.)
	help := out.String()
	if !strings.Contains(help, "\tbench ") || strings.Contains(help, "\t"+benchWorkerArg+" ") || strings.Contains(help, "bench "+benchWorkerArg) {
		t.Errorf("help should list bench and not its worker:\n%s", help)
	}
}

// The memory scenario needs no database: a quick run, as JSON.
func TestBenchMemoryJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"bench", "-quick", "-scenarios", "memory", "-memory-runs", "50", "-concurrency", "8", "-json"}, &out, &errOut)
	if code != ExitOK {
		t.Fatalf("bench = %d: %s", code, errOut.String())
	}
	var res bench.Results
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if len(res.Throughput) != 2 || res.Throughput[0].Runs != 50 || res.Engine.Concurrency != 8 || res.Sizes.Sleepers != bench.QuickOptions().Sleepers {
		t.Errorf("results = %+v", res)
	}
}

// A quick latency run on Postgres goes through the real worker command:
// the test binary re-executed as trellis bench worker.
func TestBenchRunsWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	pgtest.EmptySchema(t) // skips or fails without a database
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"bench", "-quick", "-scenarios", "latency", "-database-url", pgtest.URL()}, &out, &errOut)
	if code != ExitOK {
		t.Fatalf("bench = %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"LATENCY", "idle", "chain-5", "80"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
