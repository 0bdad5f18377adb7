package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
)

// ErrVersionNotFound is returned for a workflow version the store does not
// hold.
var ErrVersionNotFound = errors.New("workflow version not found")

// Spec returns the definition of a stored workflow version (a Workflow's
// or a run's Version), as the code that first stored it declared it: what
// a dashboard draws, with graph.Lay, for the workflow or for one of its
// runs. An unknown version is an error matching ErrVersionNotFound.
func (a *Admin) Spec(ctx context.Context, version string) (*runtime.WorkflowSpec, error) {
	def, err := a.engine.Definition(ctx, version)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("workflow version %q: %w", version, ErrVersionNotFound)
	}
	if err != nil {
		return nil, err
	}
	spec := def.Spec()
	return &spec, nil
}
