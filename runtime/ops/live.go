package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
)

// Worker is a worker the store knows: one that has heartbeated, and has
// not been forgotten (the leader forgets workers that fell silent and
// hold nothing).
type Worker struct {
	ID          string    `json:"id"`
	HeartbeatAt time.Time `json:"heartbeatAt"`
	// Alive is true when the worker heartbeated within the engine's
	// StaleAfter; the tasks of a worker that is not are recovered.
	Alive bool `json:"alive"`
	// Leases is how many tasks it is running.
	Leases int `json:"leases"`
	// Leader is true for the one worker that fires timers and recovers
	// tasks.
	Leader bool `json:"leader"`
}

// Workers lists the workers, by id.
func (a *Admin) Workers(ctx context.Context) ([]Worker, error) {
	ws, err := a.store.ListWorkers(ctx)
	if err != nil {
		return nil, err
	}
	now, staleAfter := a.engine.Clock().Now(), a.engine.Config().StaleAfter
	out := make([]Worker, len(ws))
	for i, w := range ws {
		out[i] = Worker{
			ID: w.ID, HeartbeatAt: w.HeartbeatAt.UTC(), Alive: now.Sub(w.HeartbeatAt) < staleAfter,
			Leases: w.Leases, Leader: w.Leader,
		}
	}
	return out, nil
}

// QueueGroup is the live work of one tenant's runs of one workflow.
type QueueGroup struct {
	Tenant   string `json:"tenant"`
	Workflow string `json:"workflow"`
	// Queued tasks wait for a worker; Running ones have one.
	Queued  int `json:"queued"`
	Running int `json:"running"`
	// OldestQueuedAt is when the group's longest-waiting queued task was
	// queued; absent when none is queued.
	OldestQueuedAt *time.Time `json:"oldestQueuedAt,omitempty"`
}

// Queue lists, per tenant and workflow with work queued or running, how
// many tasks wait and run and since when the oldest waits; by tenant, then
// workflow. It reads only live work.
func (a *Admin) Queue(ctx context.Context) ([]QueueGroup, error) {
	stats, err := a.store.QueueStats(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]QueueGroup, len(stats))
	for i, s := range stats {
		out[i] = QueueGroup{Tenant: s.Tenant, Workflow: s.Workflow, Queued: s.Queued, Running: s.Running, OldestQueuedAt: timeOrNil(s.OldestQueuedAt)}
	}
	return out, nil
}

// Workflow is a stored workflow version.
type Workflow struct {
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
}

// Workflows lists the stored workflow versions, by name, newest first,
// the newest of each with the workflow's schedules created at run time.
func (a *Admin) Workflows(ctx context.Context) ([]Workflow, error) {
	versions, err := a.store.ListWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	stored, err := a.engine.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	api := map[string][]runtime.Schedule{}
	for _, s := range stored {
		api[s.Workflow] = append(api[s.Workflow], s)
	}
	out := make([]Workflow, len(versions))
	for i, v := range versions {
		var spec runtime.WorkflowSpec
		if err := json.Unmarshal(v.Spec, &spec); err != nil {
			return nil, fmt.Errorf("decoding workflow version %s: %w", v.Version, err)
		}
		out[i] = Workflow{
			Name: v.Name, Version: v.Version, Description: spec.Description, Steps: len(spec.Steps), SavedAt: timeOrNil(v.SavedAt),
			Schedules: spec.Schedules,
		}
		if spec.OnFailure != nil {
			out[i].OnFailure = spec.OnFailure.Name
		}
		if i == 0 || versions[i-1].Name != v.Name {
			out[i].APISchedules = api[v.Name]
		}
	}
	return out, nil
}
