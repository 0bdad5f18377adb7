package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime"
)

// Where a schedule comes from (ScheduleInfo.Source).
const (
	// SourceFile: the workflow file declares it (WorkflowSpec.Schedules).
	SourceFile = "file"
	// SourceAPI: it was created at run time (Workflow.CreateSchedule).
	SourceAPI = "api"
)

// ScheduleInfo is a cron schedule as operators see it, whichever its
// source.
type ScheduleInfo struct {
	Workflow string `json:"workflow"`
	Name     string `json:"name"`
	// Source is SourceFile or SourceAPI.
	Source string `json:"source"`
	// Version is the stored version whose file declares the schedule (the
	// newest of its workflow); empty for SourceAPI, whose schedules belong
	// to the workflow, whatever version the engines run.
	Version  string          `json:"version,omitempty"`
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone,omitempty"`
	Tenant   string          `json:"tenant"`
	Input    json.RawMessage `json:"input"`
	Paused   bool            `json:"paused,omitempty"`
	// CreatedAt and UpdatedAt are those of a SourceAPI schedule.
	CreatedAt *time.Time `json:"createdAt,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

// Schedules lists the schedules of the workflow named (of every workflow
// when it is empty), by workflow, then name: those the file of each
// workflow's newest stored version declares, and those created at run
// time.
func (a *Admin) Schedules(ctx context.Context, workflow string) ([]ScheduleInfo, error) {
	versions, err := a.store.ListWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	var out []ScheduleInfo
	seen := map[string]bool{}
	newest := map[string]string{} // version by workflow, to redact inputs with
	for _, v := range versions {  // newest first within a name
		if seen[v.Name] || workflow != "" && v.Name != workflow {
			continue
		}
		seen[v.Name] = true
		newest[v.Name] = v.Version
		var spec runtime.WorkflowSpec
		if err := json.Unmarshal(v.Spec, &spec); err != nil {
			return nil, fmt.Errorf("decoding workflow version %s: %w", v.Version, err)
		}
		for _, s := range spec.Schedules {
			out = append(out, fileSchedule(v.Name, v.Version, s))
		}
	}
	var names []string
	if workflow != "" {
		names = []string{workflow}
	}
	stored, err := a.engine.Schedules(ctx, names...)
	if err != nil {
		return nil, err
	}
	for _, s := range stored {
		out = append(out, apiSchedule(s))
	}
	for i := range out { // a schedule's input is shown as its workflow's newest version marks it
		def, _ := a.engine.Definition(ctx, newest[out[i].Workflow])
		out[i].Input = redactInput(def, out[i].Input)
	}
	slices.SortStableFunc(out, func(a, b ScheduleInfo) int {
		return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Name, b.Name))
	})
	if out == nil {
		out = []ScheduleInfo{}
	}
	return out, nil
}

func fileSchedule(workflow, version string, s runtime.ScheduleSpec) ScheduleInfo {
	tenant := s.Tenant
	if tenant == "" {
		tenant = runtime.DefaultTenant
	}
	input := json.RawMessage(s.Input)
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	return ScheduleInfo{
		Workflow: workflow, Name: s.Name, Source: SourceFile, Version: version,
		Cron: s.Cron, Timezone: s.Timezone, Tenant: tenant, Input: input,
	}
}

func apiSchedule(s runtime.Schedule) ScheduleInfo {
	return ScheduleInfo{
		Workflow: s.Workflow, Name: s.Name, Source: SourceAPI,
		Cron: s.Cron, Timezone: s.Timezone, Tenant: s.Tenant, Input: s.Input, Paused: s.Paused,
		CreatedAt: timeOrNil(s.CreatedAt), UpdatedAt: timeOrNil(s.UpdatedAt),
	}
}

// DeleteSchedule deletes a schedule created at run time (one of the
// workflow file is changed in the file); runtime.ErrScheduleNotFound
// when there is none. Engines stop firing it within their
// Config.ScheduleRefresh.
func (a *Admin) DeleteSchedule(ctx context.Context, workflow, name string) error {
	return a.engine.DeleteSchedule(ctx, workflow, name)
}

// PauseSchedule pauses a schedule created at run time; see
// runtime.Engine.PauseSchedule.
func (a *Admin) PauseSchedule(ctx context.Context, workflow, name string) (ScheduleInfo, error) {
	s, err := a.engine.PauseSchedule(ctx, workflow, name)
	return apiSchedule(s), err
}

// ResumeSchedule resumes a paused schedule; see
// runtime.Engine.ResumeSchedule.
func (a *Admin) ResumeSchedule(ctx context.Context, workflow, name string) (ScheduleInfo, error) {
	s, err := a.engine.ResumeSchedule(ctx, workflow, name)
	return apiSchedule(s), err
}
