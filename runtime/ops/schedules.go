package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/effectivelabs/trellis/runtime"
)

// Schedules lists the schedules of the workflow named (of every workflow
// when it is empty), by workflow, then name: those the file of each
// workflow's newest stored version declares (Source
// runtime.ScheduleSourceFile), and those created at run time
// (runtime.Engine.Schedules), each input with what its workflow's newest
// version marks sensitive redacted. It adds to the engine's list what
// only stored versions tell: the files' schedules, and which values are
// sensitive.
func (a *Admin) Schedules(ctx context.Context, workflow string) ([]runtime.Schedule, error) {
	versions, err := a.store.ListWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	var out []runtime.Schedule
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
	out = append(out, stored...)
	for i := range out { // a schedule's input is shown as its workflow's newest version marks it
		def, _ := a.engine.Definition(ctx, newest[out[i].Workflow])
		out[i].Input = redactInput(def, out[i].Input)
	}
	slices.SortStableFunc(out, func(a, b runtime.Schedule) int {
		return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Name, b.Name))
	})
	if out == nil {
		out = []runtime.Schedule{}
	}
	return out, nil
}

// RedactSchedule returns s as Schedules shows it: its input with what its
// workflow's newest stored version marks sensitive redacted (the whole
// input when no version can be read). It is for a schedule an action
// returns as stored, such as runtime.Engine.PauseSchedule's.
func (a *Admin) RedactSchedule(ctx context.Context, s runtime.Schedule) runtime.Schedule {
	var def *runtime.Definition
	if versions, err := a.store.ListWorkflows(ctx); err == nil {
		for _, v := range versions { // newest first within a name
			if v.Name == s.Workflow {
				def, _ = a.engine.Definition(ctx, v.Version)
				break
			}
		}
	}
	s.Input = redactInput(def, s.Input)
	return s
}

func fileSchedule(workflow, version string, s runtime.ScheduleSpec) runtime.Schedule {
	tenant := s.Tenant
	if tenant == "" {
		tenant = runtime.DefaultTenant
	}
	input := json.RawMessage(s.Input)
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	return runtime.Schedule{
		Workflow: workflow, Name: s.Name, Source: runtime.ScheduleSourceFile, Version: version,
		Cron: s.Cron, Timezone: s.Timezone, Tenant: tenant, Input: input,
	}
}
