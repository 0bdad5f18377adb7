package store

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"time"
)

// Schedules keeps the cron schedules created at run time (through
// runtime.Workflow.CreateSchedule, rather than in the workflow file). A
// store keeps them as data: it checks neither the cron expression nor the
// input, which the engine does before it saves a schedule and again before
// it fires one. Engines read them every few seconds (see
// runtime.Config.ScheduleRefresh) and fire their ticks as they fire the
// workflow file's; a schedule is addressed by its workflow's name (not a
// version) and its own name, unique within the workflow.
type Schedules interface {
	// PutSchedule creates the schedule p.Schedule names, or updates the
	// one of that workflow and name when any of its settings (Cron,
	// Timezone, Input, Tenant) differ; one with the same settings is left
	// as it is (idempotent). Input is compared as JSON, not as text. A
	// created or updated schedule gets Now as its UpdatedAt (and, when
	// created, CreatedAt); Paused is kept on update, false on create. It
	// returns the schedule as stored and what it did.
	PutSchedule(ctx context.Context, p PutSchedule) (PutScheduleResult, error)
	// ListSchedules returns the schedules of the workflows named (of every
	// workflow when Workflows is empty), by workflow, then name.
	ListSchedules(ctx context.Context, q ScheduleQuery) ([]Schedule, error)
	// DeleteSchedule deletes a schedule, or returns ErrNotFound. The runs
	// it started are left as they are.
	DeleteSchedule(ctx context.Context, workflow, name string) error
	// PauseSchedule pauses (paused true) or resumes a schedule, setting
	// its UpdatedAt to now when that changes its state, and returns it as
	// stored; ErrNotFound when there is none. Engines fire no tick of a
	// paused schedule, and, once resumed, none that came before it was
	// resumed.
	PauseSchedule(ctx context.Context, workflow, name string, paused bool, now time.Time) (Schedule, error)
}

// Schedule is a cron schedule, the one schedule type from the store to
// the user: runtime.Schedule is this type, and its JSON is what trellis
// schedules prints with -format json. A store keeps the schedules created
// at run time; the workflow file's are in its spec, and operators' tools
// list them too (ops.Admin.Schedules), with Source and Version set.
type Schedule struct {
	Workflow string `json:"workflow"`
	Name     string `json:"name"`
	// Source says where the schedule comes from: ScheduleSourceAPI for
	// one created at run time, ScheduleSourceFile for one its workflow's
	// file declares. A store leaves it empty (its schedules are all
	// created at run time); the engine sets it.
	Source string `json:"source"`
	// Version is the stored version whose file declares a
	// ScheduleSourceFile schedule; empty for ScheduleSourceAPI, whose
	// schedules belong to the workflow, whatever version the engines run.
	Version string `json:"version,omitempty"`
	// Cron is a cron expression (five fields or a descriptor such as
	// @hourly) read in Timezone, an IANA name ("" for UTC).
	Cron     string `json:"cron"`
	Timezone string `json:"timezone,omitempty"`
	Tenant   string `json:"tenant"`
	// Input is the JSON input of the runs it starts.
	Input  json.RawMessage `json:"input"`
	Paused bool            `json:"paused,omitempty"`
	// CreatedAt is when it was created, and UpdatedAt when its settings
	// or its paused state last changed, by the clock of the engine that
	// changed them: engines fire no tick that came before UpdatedAt. Both
	// are zero for a ScheduleSourceFile schedule.
	CreatedAt time.Time `json:"createdAt,omitzero"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
}

// Where a schedule comes from (Schedule.Source).
const (
	// ScheduleSourceFile: its workflow's file declares it.
	ScheduleSourceFile = "file"
	// ScheduleSourceAPI: it was created at run time
	// (runtime.Workflow.CreateSchedule) and a store keeps it.
	ScheduleSourceAPI = "api"
)

// SameSettings reports whether s and o start the same runs at the same
// ticks: the same Cron, Timezone and Tenant, and inputs that are the
// same JSON value (key order and spacing aside), as PutSchedule compares
// them.
func (s Schedule) SameSettings(o Schedule) bool {
	return s.Cron == o.Cron && s.Timezone == o.Timezone && s.Tenant == o.Tenant && sameJSON(s.Input, o.Input)
}

// sameJSON reports whether a and b hold the same JSON value; text that is
// not JSON is compared as bytes.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

// PutSchedule holds what PutSchedule needs.
type PutSchedule struct {
	Schedule Schedule // Workflow, Name, Cron, Timezone, Input, Tenant
	Now      time.Time
}

// PutScheduleResult is what PutSchedule did.
type PutScheduleResult struct {
	Schedule Schedule
	// Created is true when no schedule of that name existed; Updated when
	// one did and its settings changed. Both are false when it was left as
	// it was.
	Created bool
	Updated bool
}

// ScheduleQuery selects schedules for ListSchedules.
type ScheduleQuery struct {
	// Workflows, when not empty, keeps the schedules of other workflows
	// out.
	Workflows []string
}
