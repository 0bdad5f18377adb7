package bench

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	ok := DefaultOptions()
	ok.DatabaseURL = "postgres://x"
	if err := ok.Validate(); err != nil {
		t.Fatalf("default options with a database: %v", err)
	}
	if err := QuickOptions().Validate(); err == nil || !strings.Contains(err.Error(), "no database") {
		t.Errorf("options without a database = %v, want a no database error", err)
	}
	memoryOnly := QuickOptions()
	memoryOnly.Scenarios = []string{ScenarioMemory}
	if err := memoryOnly.Validate(); err != nil {
		t.Errorf("the memory scenario needs no database, got %v", err)
	}
	tests := []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"unknown scenario", func(o *Options) { o.Scenarios = []string{"speed"} }, `unknown scenario "speed"`},
		{"no scenario", func(o *Options) { o.Scenarios = nil }, "no scenario"},
		{"zero workers", func(o *Options) { o.Workers = []int{2, 0} }, "worker count 0"},
		{"no runs", func(o *Options) { o.Runs = 0 }, "runs must be positive"},
		{"warm-up too long", func(o *Options) { o.SteadyWarmup = o.SteadyDuration }, "warm-up"},
		{"negative engine setting", func(o *Options) { o.Engine.Concurrency = -1 }, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.change(&o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestWorkerArgsParseBack(t *testing.T) {
	want := WorkerOptions{DatabaseURL: "postgres://u@h/db?sslmode=disable", Schema: "trellis_bench_x", Name: "bench-2",
		Engine: EngineSettings{Concurrency: 8, ClaimBatch: 4, PollInterval: 250 * time.Millisecond, OTel: true}}
	var got WorkerOptions
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	got.Flags(fs)
	if err := fs.Parse(want.Args()); err != nil {
		t.Fatal(err)
	}
	for _, a := range want.Args() {
		if strings.Contains(a, "postgres://") {
			t.Errorf("a worker's command line holds the database URL (%q): every user of the machine can read it", a)
		}
	}
	env, ok := strings.CutPrefix(want.Env(), DatabaseURLEnv+"=")
	if !ok {
		t.Fatalf("Env() = %q, want %s=...", want.Env(), DatabaseURLEnv)
	}
	got.DatabaseURL = env
	if got != want {
		t.Errorf("Args parsed back as %+v, want %+v", got, want)
	}
}

func TestEngineSettingsString(t *testing.T) {
	want := "concurrency 100 (default), claim batch 100 (default), poll interval 1s (default), batch window 1ms (default)"
	if got := (EngineSettings{}).String(); got != want {
		t.Errorf("zero settings = %q, want the engine's defaults: %q", got, want)
	}
	got := (EngineSettings{Concurrency: 32, PollInterval: 2 * time.Second}).String()
	if !strings.Contains(got, "concurrency 32, claim batch 32 (default), poll interval 2s,") {
		t.Errorf("settings = %q", got)
	}
	if got := (EngineSettings{OTel: true}).String(); !strings.HasSuffix(got, ", OpenTelemetry on (SDK, every span sampled, exporters discarding)") {
		t.Errorf("settings with -otel = %q, want it to say OpenTelemetry is on", got)
	}
}
