package bench

import (
	"fmt"
	"strconv"
	"time"

	"github.com/effectivelabs/trellis/runtime"
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
}

// String says the settings, naming the engine's default for zero ones.
func (s EngineSettings) String() string {
	def := func(v int) string {
		if v == 0 {
			return "engine default"
		}
		return strconv.Itoa(v)
	}
	poll := "engine default"
	if s.PollInterval > 0 {
		poll = s.PollInterval.String()
	}
	return fmt.Sprintf("concurrency %s, claim batch %s, poll interval %s", def(s.Concurrency), def(s.ClaimBatch), poll)
}
