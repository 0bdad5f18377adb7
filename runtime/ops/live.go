package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
)

// Worker is a worker the store knows, with whether it is alive: the
// store's record (store.Worker).
type Worker = store.Worker

// Workers lists the workers, by id.
func (a *Admin) Workers(ctx context.Context) ([]Worker, error) {
	ws, err := a.store.ListWorkers(ctx)
	if err != nil {
		return nil, err
	}
	now, staleAfter := a.engine.Clock().Now(), a.engine.Config().StaleAfter
	for i := range ws {
		w := &ws[i]
		w.HeartbeatAt, w.Alive = w.HeartbeatAt.UTC(), now.Sub(w.HeartbeatAt) < staleAfter
	}
	return ws, nil
}

// Unserved is queued work that no live worker can claim: the store's
// record (store.Unserved).
type Unserved = store.Unserved

// Unserved lists the queued work that no live worker (one that
// heartbeated within the engine's StaleAfter) can claim, the largest
// groups first, at most 100: tasks that need worker labels no live
// worker has. They wait until such a worker starts.
func (a *Admin) Unserved(ctx context.Context) ([]Unserved, error) {
	now, staleAfter := a.engine.Clock().Now(), a.engine.Config().StaleAfter
	out, err := a.store.Unserved(ctx, store.UnservedQuery{AliveSince: now.Add(-staleAfter), Limit: 100})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].OldestQueuedAt = out[i].OldestQueuedAt.UTC()
	}
	return out, nil
}

// QueueGroup is the live work of one tenant's runs of one workflow: the
// store's record (store.QueueStat).
type QueueGroup = store.QueueStat

// Queue lists, per tenant and workflow with work queued or running, how
// many tasks wait and run and since when the oldest waits, and whether a
// pause holds them (Paused); by tenant, then workflow. It reads only live
// work.
func (a *Admin) Queue(ctx context.Context) ([]QueueGroup, error) {
	stats, err := a.store.QueueStats(ctx)
	if err != nil {
		return nil, err
	}
	pauses, err := a.engine.PausedWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	for i := range stats {
		if !stats[i].OldestQueuedAt.IsZero() {
			stats[i].OldestQueuedAt = stats[i].OldestQueuedAt.UTC()
		}
		stats[i].Paused = Paused(pauses, stats[i].Workflow, stats[i].Tenant)
	}
	return stats, nil
}

// QueueStep is the queued work of one step of a workflow version, of one
// tenant's runs: the store's record (store.QueueStepStat) with the step's
// name.
type QueueStep struct {
	store.QueueStepStat
	// Name is the step's name in its version ("step 3" when the version
	// cannot be read).
	Name string `json:"name"`
}

// QueueSteps lists one tenant's queued tasks of one workflow per version
// and step, with how many of them wait for a concurrency slot and since
// when the oldest waits: where in a workflow a group of the Queue waits.
// Its cost grows with the group's queued tasks.
func (a *Admin) QueueSteps(ctx context.Context, tenant, workflow string) ([]QueueStep, error) {
	stats, err := a.store.QueueSteps(ctx, tenant, workflow)
	if err != nil {
		return nil, err
	}
	out := make([]QueueStep, len(stats))
	names := map[string][]string{}
	for i, s := range stats {
		if _, ok := names[s.Version]; !ok {
			names[s.Version] = a.stepNames(ctx, s.Version)
		}
		s.OldestQueuedAt = s.OldestQueuedAt.UTC()
		out[i] = QueueStep{QueueStepStat: s, Name: stepName(names[s.Version], s.Step)}
	}
	return out, nil
}

// Paused reports whether pauses hold the tasks of workflow's runs of
// tenant: the workflow is paused for every tenant or for that one.
func Paused(pauses []runtime.WorkflowPause, workflow, tenant string) bool {
	return slices.ContainsFunc(pauses, func(p runtime.WorkflowPause) bool {
		return p.Workflow == workflow && (p.Tenant == "" || p.Tenant == tenant)
	})
}

// PausesOf returns the pauses of workflow, in pauses' order.
func PausesOf(pauses []runtime.WorkflowPause, workflow string) []runtime.WorkflowPause {
	var out []runtime.WorkflowPause
	for _, p := range pauses {
		if p.Workflow == workflow {
			p.PausedAt = p.PausedAt.UTC()
			out = append(out, p)
		}
	}
	return out
}

// WorkflowSummary is a stored workflow version as ops lists it: a summary
// read from its spec (description, step count, failure handler, cron
// schedules), with the workflow's schedules created at run time. It is
// not a second type for the stored version (store.WorkflowVersion, the
// spec as the store keeps it), nor for the workflow itself (spec.Workflow,
// the model; runtime.Workflow, the handle that triggers runs).
type WorkflowSummary struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// Steps counts its steps, the failure handler not included.
	Steps int `json:"steps"`
	// OnFailure names its failure handler, if it has one.
	OnFailure string `json:"onFailure,omitempty"`
	// SavedAt is when the version was first stored (absent when the store
	// does not know).
	SavedAt *time.Time `json:"savedAt,omitempty"`
	// Schedules are the version's cron schedules.
	Schedules []runtime.ScheduleSpec `json:"schedules,omitempty"`
	// APISchedules are the workflow's schedules created at run time
	// (Workflow.CreateSchedule), on its newest version only: they belong
	// to the workflow, whatever version the engines run.
	APISchedules []runtime.Schedule `json:"apiSchedules,omitempty"`
	// StartOn are the events that start runs of the version.
	StartOn []runtime.StartOnSpec `json:"startOn,omitempty"`
	// Paused are the workflow's pauses (Engine.PauseWorkflow), each with
	// the tasks it holds, on its newest version only: a pause holds every
	// version of the workflow.
	Paused []runtime.WorkflowPause `json:"paused,omitempty"`
}

// Workflows lists the stored workflow versions, by name, newest first,
// the newest of each with the workflow's schedules created at run time
// and its pauses.
func (a *Admin) Workflows(ctx context.Context) ([]WorkflowSummary, error) {
	versions, err := a.store.ListWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	stored, err := a.engine.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	pauses, err := a.engine.PausedWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	api := map[string][]runtime.Schedule{}
	for _, s := range stored {
		api[s.Workflow] = append(api[s.Workflow], s)
	}
	out := make([]WorkflowSummary, len(versions))
	for i, v := range versions {
		var spec runtime.WorkflowSpec
		if err := json.Unmarshal(v.Spec, &spec); err != nil {
			return nil, fmt.Errorf("decoding workflow version %s: %w", v.Version, err)
		}
		out[i] = WorkflowSummary{
			Name: v.Name, Version: v.Version, Description: spec.Description, Steps: len(spec.Steps), SavedAt: timeOrNil(v.SavedAt),
			Schedules: spec.Schedules, StartOn: spec.StartOn,
		}
		if spec.OnFailure != nil {
			out[i].OnFailure = spec.OnFailure.Name
		}
		if i == 0 || versions[i-1].Name != v.Name {
			out[i].APISchedules = api[v.Name]
			out[i].Paused = PausesOf(pauses, v.Name)
		}
	}
	return out, nil
}
