package bench

import (
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// EngineSettings are the engine settings the bench varies. A zero field
// leaves the engine's own default in place.
type EngineSettings struct {
	// Concurrency is runtime.Config.Concurrency: steps run at once per
	// engine.
	Concurrency int `json:"concurrency"`
	// ClaimBatch is runtime.Config.ClaimBatch: most tasks per claim.
	ClaimBatch int `json:"claim_batch"`
	// PollInterval is runtime.Config.PollInterval.
	PollInterval time.Duration `json:"poll_interval_ns"`
	// OTel turns OpenTelemetry metrics and tracing on, in the engines
	// that execute steps and in the one the harness triggers runs
	// through, with the SDK exporting to nowhere (see withTelemetry): the
	// cost of the instrumentation, which an A/B of this flag measures.
	OTel bool `json:"otel,omitempty"`
	// NoHandOff is runtime.Config.DisableHandOff: every task goes through
	// the ready queue, as before hand-offs (an A/B of this flag measures
	// what they buy).
	NoHandOff bool `json:"no_hand_off,omitempty"`
}

// Validate reports negative settings.
func (s EngineSettings) Validate() error {
	if s.Concurrency < 0 || s.ClaimBatch < 0 || s.PollInterval < 0 {
		return fmt.Errorf("engine settings must not be negative (0 means the engine's default): %s", s)
	}
	return nil
}

// apply sets the non-zero settings on cfg.
func (s EngineSettings) apply(cfg *runtime.Config) {
	cfg.Concurrency = s.Concurrency
	cfg.ClaimBatch = s.ClaimBatch
	cfg.PollInterval = s.PollInterval
	cfg.DisableHandOff = s.NoHandOff
}

// String says the settings the engines run with: the engine's own values
// for zero ones, marked as defaults.
func (s EngineSettings) String() string {
	cfg := runtime.Config{Store: memstore.New()}
	s.apply(&cfg)
	e, err := runtime.New(cfg)
	if err != nil {
		return fmt.Sprintf("invalid settings: %v", err)
	}
	eff := e.Config()
	mark := func(set bool) string {
		if set {
			return ""
		}
		return " (default)"
	}
	otel := ""
	if s.OTel {
		otel = ", OpenTelemetry on (SDK, every span sampled, exporters discarding)"
	}
	if s.NoHandOff {
		otel += ", no hand-offs (every task claimed from the queue)"
	}
	return fmt.Sprintf("concurrency %d%s, claim batch %d%s, poll interval %s%s, batch window %s (default)%s",
		eff.Concurrency, mark(s.Concurrency != 0), eff.ClaimBatch, mark(s.ClaimBatch != 0),
		eff.PollInterval, mark(s.PollInterval != 0), eff.BatchWindow, otel)
}
