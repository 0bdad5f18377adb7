package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
)

// SendEvent is an event to send from outside the application: to one
// run (Run), or by key (Key, for the waits with that key in runs of
// Tenant).
type SendEvent struct {
	Workflow string
	Event    string
	Run      runtime.RunID
	Key      string
	// Tenant is the tenant of the runs a keyed event reaches; empty means
	// the default tenant.
	Tenant  string
	Payload json.RawMessage
}

// Sent reports what sending an event did.
type Sent struct {
	Workflow string        `json:"workflow"`
	Version  string        `json:"version"`
	Event    string        `json:"event"`
	Run      runtime.RunID `json:"run,omitempty"`
	Key      string        `json:"key,omitempty"`
	// Woken is how many waiting steps the event woke; those that begin
	// to wait later receive it then.
	Woken int `json:"woken"`
}

// SendEvent sends an event as the workflow's generated client would,
// checking its payload against the event's schema in the workflow's
// newest stored version: what trellis events send does, for an operator
// who must unblock a run. Exactly one of Run and Key is given.
func (a *Admin) SendEvent(ctx context.Context, e SendEvent) (Sent, error) {
	if (e.Run == uuid.Nil) == (e.Key == "") {
		return Sent{}, errors.New("give either a run to send the event to, or a key to send it with")
	}
	versions, err := a.store.ListWorkflows(ctx)
	if err != nil {
		return Sent{}, err
	}
	versions = slices.DeleteFunc(versions, func(v store.WorkflowVersion) bool { return v.Name != e.Workflow })
	if len(versions) == 0 {
		return Sent{}, fmt.Errorf("no version of workflow %q is stored (a workflow is stored when its first run is triggered)", e.Workflow)
	}
	var spec runtime.WorkflowSpec
	if err := json.Unmarshal(versions[0].Spec, &spec); err != nil { // the newest
		return Sent{}, fmt.Errorf("decoding workflow version %s: %w", versions[0].Version, err)
	}
	if _, ok := spec.Event(e.Event); !ok {
		var names []string
		for _, ev := range spec.Events {
			names = append(names, ev.Name)
		}
		if len(names) == 0 {
			return Sent{}, fmt.Errorf("workflow %s (%s) declares no events", e.Workflow, versions[0].Version)
		}
		return Sent{}, fmt.Errorf("workflow %s (%s) declares no event %q; it declares %v", e.Workflow, versions[0].Version, e.Event, names)
	}
	w, err := a.engine.Workflow(&spec)
	if err != nil {
		return Sent{}, err
	}
	out := Sent{Workflow: e.Workflow, Version: versions[0].Version, Event: e.Event, Run: e.Run, Key: e.Key}
	if e.Run != uuid.Nil {
		out.Woken, err = w.Signal(ctx, e.Run, e.Event, e.Payload)
		return out, err
	}
	var opts []runtime.RunOption
	if e.Tenant != "" {
		opts = append(opts, runtime.WithTenant(e.Tenant))
	}
	out.Woken, err = w.Send(ctx, e.Event, e.Key, e.Payload, opts...)
	return out, err
}
