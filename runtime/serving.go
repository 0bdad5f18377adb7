package runtime

import (
	"context"
	"fmt"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/schema/spec"
)

// Which workflow versions an engine serves (issue 31): the only tasks it
// claims, or is handed off, are theirs, so that no run is ever run by code
// of another version of its workflow. An engine serves
//
//   - the versions it registered (Register), and their map steps' items
//     workflows;
//   - the former versions it registered (RegisterFormer): the workflow
//     files of earlier versions kept, generated into packages of their
//     own, with their code;
//   - the stored versions of a registered workflow that its code can run:
//     those codeCompatible finds compatible with the registered one (no
//     breaking change between them, by spec.Compare). A started engine looks for them when it starts and
//     every Config.VersionRefresh.
//
// It announces what it serves (store.AnnounceWorker) when it starts and
// whenever that changes: trellis workers lists it, and the queued tasks
// of a version no live worker serves are shown as unserved
// (ops.Unserved).

// versionsPerRefresh bounds how many stored versions one refresh loads
// and compares: each is loaded once per process, so a store with many
// versions is read over several refreshes rather than in one burst.
const versionsPerRefresh = 64

// ServedVersions returns the workflow versions this engine serves,
// sorted: the only ones whose tasks it claims.
func (e *Engine) ServedVersions() []string { return e.registry.served() }

// refreshServed compares the stored versions of the registered workflows
// that this engine has not compared yet with the registered version of
// their workflow, and serves those its code can run. It reports whether
// what the engine serves changed.
func (e *Engine) refreshServed(ctx context.Context) (bool, error) {
	names := e.registry.workflowNames()
	if len(names) == 0 {
		return false, nil
	}
	stored, err := e.store.WorkflowVersions(ctx, names)
	if err != nil {
		return false, fmt.Errorf("reading the stored workflow versions: %w", err)
	}
	changed, loaded := false, 0
	for _, v := range stored {
		current, ok := e.registry.toCompare(v.Name, v.Version)
		if !ok {
			continue
		}
		if loaded == versionsPerRefresh {
			break
		}
		loaded++
		def, err := e.definition(ctx, v.Version)
		if err != nil {
			// A version this binary cannot read (a newer format) is not
			// served; it is compared again by the next process only.
			e.log.Warn("a stored workflow version could not be read; not serving it", "version", v.Version, "error", err)
			e.registry.compared(v.Version, nil)
			continue
		}
		if codeCompatible(def, current) {
			e.registry.compared(v.Version, current)
			changed = true
			e.log.Info("serving a stored workflow version the registered code can run",
				"version", v.Version, "registered", current.def.Version())
		} else {
			e.registry.compared(v.Version, nil)
		}
	}
	return changed, nil
}

// announce records what this engine serves in the store, for operators
// and the unserved work (see above).
func (e *Engine) announce(ctx context.Context) error {
	return e.store.AnnounceWorker(ctx, e.cfg.WorkerID, e.registry.served(), spec.LabelList(e.cfg.Labels), e.clock.Now())
}

// servingLoop refreshes the versions served every Config.VersionRefresh
// while the engine runs, announcing them when they changed.
func (e *Engine) servingLoop(ctx context.Context) {
	if len(e.registry.workflowNames()) == 0 {
		return
	}
	for {
		if err := clock.Sleep(ctx, e.clock, e.cfg.VersionRefresh); err != nil {
			return
		}
		changed, err := e.refreshServed(ctx)
		if err == nil && changed {
			err = e.announce(ctx)
		}
		if err != nil && ctx.Err() == nil {
			e.log.Warn("refreshing the workflow versions served failed; retrying", "error", err, "in", e.cfg.VersionRefresh)
		}
	}
}

// codeCompatible reports whether the code of reg, a registered version of
// a workflow, can run the runs of stored, another version of it: the one
// rule of what an engine serves besides what it registered. The workflow
// changed in nothing those runs would notice (spec.Compare, from stored
// to the registered version, finds no breaking change: no step removed
// or renamed, no output, parents or input changed in a way that breaks),
// and reg's code covers every step of stored that runs code, and its
// failure handler.
func codeCompatible(stored *Definition, reg *registration) bool {
	for _, c := range spec.Compare(&stored.spec, &reg.def.spec) {
		if c.Breaking {
			return false
		}
	}
	return len(missingCode(stored, reg.handlers)) == 0
}
