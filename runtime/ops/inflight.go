package ops

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
)

// InFlight is what a change of workflows must not break: the versions
// with runs in progress, what their runs have still to do, and the
// schedules created at run time (their inputs are checked against the
// new input schema). trellis lint -against reads it.
type InFlight struct {
	Versions []VersionInFlight `json:"versions"`
	// More is true when more versions have runs in progress than the
	// limit InFlight was given: Versions are the first, by workflow and
	// version.
	More bool `json:"more,omitempty"`
	// Schedules are the schedules created at run time, of every
	// workflow (a workflow file's own schedules are in its spec).
	Schedules []runtime.Schedule `json:"schedules"`
}

// VersionInFlight is a workflow version with runs in progress.
type VersionInFlight struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Spec is the version's stored spec; nil when the store does not
	// hold it or it cannot be decoded (SpecError says why).
	Spec      *runtime.WorkflowSpec `json:"-"`
	SpecError string                `json:"specError,omitempty"`
	// Runs is how many of its runs are in progress.
	Runs int `json:"runs"`
	// Steps counts, by step index, the runs in progress whose task of the
	// step has not ended: still to run, running, or waiting (see
	// store.VersionInFlight).
	Steps []store.StepInFlight `json:"steps"`
}

// StepRuns returns how many runs in progress have step i not ended.
func (v *VersionInFlight) StepRuns(i int) int {
	for _, s := range v.Steps {
		if s.Step == i {
			return s.Runs
		}
	}
	return 0
}

// InFlight reads the versions with runs in progress, at most limit of
// them (store.DefaultInFlightLimit when not positive), with their specs
// and per-step counts, and the schedules created at run time. The store
// counts; no run is read.
func (a *Admin) InFlight(ctx context.Context, limit int) (InFlight, error) {
	versions, more, err := a.store.InFlight(ctx, limit)
	if err != nil {
		return InFlight{}, err
	}
	schedules, err := a.engine.Schedules(ctx)
	if err != nil {
		return InFlight{}, err
	}
	out := InFlight{More: more, Schedules: schedules, Versions: make([]VersionInFlight, len(versions))}
	for i, v := range versions {
		vf := VersionInFlight{Name: v.Version.Name, Version: v.Version.Version, Runs: v.Runs, Steps: v.Steps}
		switch {
		case len(v.Version.Spec) == 0:
			vf.SpecError = "the version is not stored"
		default:
			var spec runtime.WorkflowSpec
			if err := json.Unmarshal(v.Version.Spec, &spec); err != nil {
				vf.SpecError = fmt.Sprintf("decoding the stored spec: %v", err)
			} else {
				spec.FillWaitOutputs()
				vf.Spec = &spec
			}
		}
		out.Versions[i] = vf
	}
	return out, nil
}
