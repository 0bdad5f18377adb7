package ops

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/effectivelabs/trellis/runtime"
)

// latestVersion returns the newest stored version of the workflow
// named, or an error matching ErrVersionNotFound when none is stored.
func (a *Admin) latestVersion(ctx context.Context, workflow string) (string, error) {
	versions, err := a.store.ListWorkflows(ctx)
	if err != nil {
		return "", err
	}
	for _, v := range versions { // by name, newest first
		if v.Name == workflow {
			return v.Version, nil
		}
	}
	return "", fmt.Errorf("no version of workflow %q is stored (a workflow is stored when its first run is triggered): %w", workflow, ErrVersionNotFound)
}

// Trigger starts a run of the newest stored version of the workflow named
// with a JSON input, for a process that was not built with the workflow
// (the dashboard, a script). It goes through Workflow.Trigger, so the run
// is validated and created as any other: invalid input is refused with a
// *runtime.InputError naming each field, and a bad tenant or idempotency
// key with the engine's error; nothing is written then. An idempotency
// key an earlier run holds returns that run, with RunRef.Existing.
//
// The run is executed by whichever workers registered a workflow of that
// name (workers claim by name, and run each run's own stored version);
// until one does, its first steps wait in the queue.
func (a *Admin) Trigger(ctx context.Context, workflow string, input json.RawMessage, opts ...runtime.RunOption) (runtime.RunRef, error) {
	version, err := a.latestVersion(ctx, workflow)
	if err != nil {
		return runtime.RunRef{}, err
	}
	def, err := a.engine.Definition(ctx, version)
	if err != nil {
		return runtime.RunRef{}, err
	}
	spec := def.Spec()
	w, err := a.engine.Workflow(&spec)
	if err != nil {
		return runtime.RunRef{}, fmt.Errorf("compiling workflow version %s: %w", version, err)
	}
	return w.Trigger(ctx, input, opts...)
}
