package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

// Schedule is a cron schedule: one created at run time
// (Workflow.CreateSchedule), as the store keeps it and the engine returns
// it (Source ScheduleSourceAPI, times in UTC), or, in operators' listings
// (ops.Admin.Schedules), one a workflow file declares (Source
// ScheduleSourceFile; the file's own are in its spec,
// WorkflowSpec.Schedules). Paused schedules start no run (PauseSchedule,
// ResumeSchedule). It is the store's record, store.Schedule.
type Schedule = store.Schedule

// Where a schedule comes from (Schedule.Source).
const (
	// ScheduleSourceFile: its workflow's file declares it.
	ScheduleSourceFile = store.ScheduleSourceFile
	// ScheduleSourceAPI: it was created at run time.
	ScheduleSourceAPI = store.ScheduleSourceAPI
)

// ErrInvalidSchedule is matched by a *ScheduleError: CreateSchedule
// refused a schedule, and nothing was written.
var ErrInvalidSchedule = errors.New("invalid schedule")

// ErrScheduleNotFound is returned for a schedule the store does not keep
// (DeleteSchedule, PauseSchedule, ResumeSchedule).
var ErrScheduleNotFound = errors.New("schedule not found")

// ScheduleError lists every problem CreateSchedule found with a schedule:
// its name, cron expression, time zone or input (an *InputError, so that
// errors.Is(err, ErrInvalidInput) holds for a bad input too).
type ScheduleError struct {
	Workflow string
	Name     string
	Problems []error
}

func (e *ScheduleError) Error() string {
	return fmt.Sprintf("schedule %s of workflow %s: %v", clip(e.Name), e.Workflow, errors.Join(e.Problems...))
}

// Is makes errors.Is(err, ErrInvalidSchedule) true.
func (e *ScheduleError) Is(target error) bool { return target == ErrInvalidSchedule }

// Unwrap returns the problems.
func (e *ScheduleError) Unwrap() []error { return e.Problems }

// The longest cron expression and time zone name CreateSchedule takes:
// far longer than any valid one, short enough to quote in an error.
const (
	maxCronBytes     = 256
	maxTimezoneBytes = 128
)

// ScheduleOption sets an option of CreateSchedule.
type ScheduleOption func(*scheduleOptions)

type scheduleOptions struct {
	timezone, tenant string
}

// WithTimezone reads a schedule's cron expression in an IANA time zone
// (Europe/Amsterdam), instead of UTC.
func WithTimezone(tz string) ScheduleOption {
	return func(o *scheduleOptions) { o.timezone = tz }
}

// WithScheduleTenant makes a schedule's runs belong to tenant, instead of
// DefaultTenant.
func WithScheduleTenant(tenant string) ScheduleOption {
	return func(o *scheduleOptions) { o.tenant = tenant }
}

// CreateSchedule creates a cron schedule of the workflow in the store, to
// be fired, like the workflow file's schedules, by every started engine
// that registered the workflow: each tick starts one run, with input and
// the idempotency key trellis:schedule:<name>:<tick in UTC, RFC 3339>.
// Engines other than this one notice it within their
// Config.ScheduleRefresh; no tick before it was created fires.
//
// Names are unique within the workflow. Creating a schedule that exists
// with the same settings (cron, time zone, input, tenant) changes
// nothing; with other settings, it updates the schedule (keeping it
// paused if it was): no tick before the update fires, and the runs its
// earlier ticks started are left as they are. A name the workflow file
// gives a schedule is refused. A bad name, cron expression, time zone
// or input (checked against the input schema) is refused with a
// *ScheduleError naming every problem, and nothing is written.
func (w *Workflow) CreateSchedule(ctx context.Context, name, cronExpr string, input json.RawMessage, opts ...ScheduleOption) (Schedule, error) {
	var o scheduleOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.tenant == "" {
		o.tenant = DefaultTenant
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	var problems []error
	limits := &w.engine.cfg.SizeLimits
	if err := limits.checkIdempotencyKey("idempotency key", scheduleKey(name, time.Time{})); err != nil {
		// Not quoted: it may be huge.
		problems = append(problems, fmt.Errorf("name is %d bytes: the idempotency key of its runs, trellis:schedule:<name>:<tick>, would be over the limit of %d (Config.SizeLimits.MaxIdempotencyKeyBytes); choose a shorter name",
			len(name), limits.MaxIdempotencyKeyBytes))
	} else if err := spec.CheckName(name); err != nil {
		problems = append(problems, err)
	}
	if slices.ContainsFunc(w.def.spec.Schedules, func(s ScheduleSpec) bool { return s.Name == name }) {
		problems = append(problems, errors.New("the workflow file declares a schedule of that name; choose another name"))
	}
	switch {
	case len(cronExpr) > maxCronBytes:
		problems = append(problems, fmt.Errorf("cron expression is %d bytes; a cron expression is at most %d", len(cronExpr), maxCronBytes))
	case len(o.timezone) > maxTimezoneBytes:
		problems = append(problems, fmt.Errorf("time zone is %d bytes; an IANA time zone name is at most %d", len(o.timezone), maxTimezoneBytes))
	default:
		if _, _, err := parseCron(cronExpr, o.timezone); err != nil {
			problems = append(problems, err)
		}
	}
	if err := limits.checkTenant(o.tenant); err != nil {
		problems = append(problems, err)
	}
	if err := limits.checkInput(input); err != nil {
		problems = append(problems, err)
	} else if err := w.def.ValidateInput(input); err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return Schedule{}, &ScheduleError{Workflow: w.Name(), Name: name, Problems: problems}
	}
	e := w.engine
	// The version is stored too, so that operators' tools (trellis
	// workflows) know the workflow before it has any run.
	if err := e.saveDefinition(ctx, w.def); err != nil {
		return Schedule{}, err
	}
	res, err := e.store.PutSchedule(ctx, store.PutSchedule{
		Schedule: store.Schedule{Workflow: w.Name(), Name: name, Cron: cronExpr, Timezone: o.timezone, Input: input, Tenant: o.tenant},
		Now:      e.clock.Now(),
	})
	if err != nil {
		return Schedule{}, err
	}
	e.cron.state.markChanged()
	return fromStore(res.Schedule), nil
}

// Schedules returns the schedules created at run time of the workflows
// named (of every workflow when none is), by workflow, then name. It,
// DeleteSchedule, PauseSchedule and ResumeSchedule take workflows by
// name, so that a process without a workflow's code (the trellis CLI, the
// dashboard) can manage its schedules; a typed Client has them for its
// own workflow.
func (e *Engine) Schedules(ctx context.Context, workflows ...string) ([]Schedule, error) {
	stored, err := e.store.ListSchedules(ctx, store.ScheduleQuery{Workflows: workflows})
	if err != nil {
		return nil, err
	}
	out := make([]Schedule, len(stored))
	for i, s := range stored {
		out[i] = fromStore(s)
	}
	return out, nil
}

// DeleteSchedule deletes a schedule created at run time of a workflow.
// Engines other than this one stop firing it within their
// Config.ScheduleRefresh. ErrScheduleNotFound when there is none.
func (e *Engine) DeleteSchedule(ctx context.Context, workflow, name string) error {
	err := e.store.DeleteSchedule(ctx, workflow, name)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("deleting schedule %s of %s: %w", name, workflow, ErrScheduleNotFound)
	}
	if err != nil {
		return err
	}
	e.cron.state.markChanged()
	return nil
}

// PauseSchedule pauses a schedule created at run time: no tick fires
// until ResumeSchedule (engines other than this one notice within their
// Config.ScheduleRefresh). Pausing a paused schedule changes nothing.
func (e *Engine) PauseSchedule(ctx context.Context, workflow, name string) (Schedule, error) {
	return e.cron.pause(ctx, workflow, name, true)
}

// ResumeSchedule resumes a paused schedule. The ticks that came while it
// was paused are not fired: the first is the first after it resumed.
func (e *Engine) ResumeSchedule(ctx context.Context, workflow, name string) (Schedule, error) {
	return e.cron.pause(ctx, workflow, name, false)
}

func (c *cronScheduler) pause(ctx context.Context, workflow, name string, paused bool) (Schedule, error) {
	s, err := c.store.PauseSchedule(ctx, workflow, name, paused, c.clock.Now())
	if errors.Is(err, store.ErrNotFound) {
		verb := "pausing"
		if !paused {
			verb = "resuming"
		}
		return Schedule{}, fmt.Errorf("%s schedule %s of %s: %w", verb, name, workflow, ErrScheduleNotFound)
	}
	if err != nil {
		return Schedule{}, err
	}
	c.state.markChanged()
	return fromStore(s), nil
}

// fromStore is a schedule the store keeps as the engine returns it:
// created at run time, with its times in UTC.
func fromStore(s store.Schedule) Schedule {
	s.Source, s.Version = ScheduleSourceAPI, ""
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	return s
}

// refresh reads the stored schedules of the registered
// workflows, when Config.ScheduleRefresh has passed since it last did or
// this engine changed one, and compiles them. A stored schedule that does
// not compile against the registered version (its workflow's input schema
// changed since it was created, say), or that a schedule of the workflow
// file shadows, is left out, with a warning logged once.
func (c *cronScheduler) refresh(ctx context.Context) error {
	now := c.clock.Now()
	due := c.state.refreshDue(now)
	regs := c.registry.registrations()
	if !due || len(regs) == 0 {
		return nil
	}
	byName := make(map[string]*registration, len(regs))
	names := make([]string, len(regs))
	for i, r := range regs {
		names[i] = r.def.Name()
		byName[r.def.Name()] = r
	}
	stored, err := c.store.ListSchedules(ctx, store.ScheduleQuery{Workflows: names})
	if err != nil {
		c.state.markChanged() // try again next time
		return fmt.Errorf("reading schedules: %w", err)
	}
	compiled := map[string][]schedule{}
	for _, st := range stored {
		r, ok := byName[st.Workflow]
		if !ok || st.Paused {
			continue
		}
		s, err := compileStored(r.def, st)
		if err != nil {
			c.warn(st, err)
			continue
		}
		compiled[st.Workflow] = append(compiled[st.Workflow], s)
	}
	c.state.loaded(compiled, now)
	return nil
}

// compileStored compiles a stored schedule for a registered version of
// its workflow.
func compileStored(def *Definition, st store.Schedule) (schedule, error) {
	if slices.ContainsFunc(def.spec.Schedules, func(s ScheduleSpec) bool { return s.Name == st.Name }) {
		return schedule{}, errors.New("the workflow file declares a schedule of the same name, which is fired instead")
	}
	c, loc, err := parseCron(st.Cron, st.Timezone)
	if err != nil {
		return schedule{}, err
	}
	if err := def.ValidateInput(st.Input); err != nil {
		return schedule{}, err
	}
	return schedule{name: st.Name, cron: c, loc: loc, input: st.Input, tenant: st.Tenant, since: st.UpdatedAt}, nil
}

// warn logs, once per version of a stored schedule, why it is not
// fired.
func (c *cronScheduler) warn(st store.Schedule, err error) {
	if c.state.firstWarning(st.Workflow+"/"+st.Name, st.UpdatedAt) {
		c.log.Warn("schedule not fired", "workflow", st.Workflow, "schedule", st.Name, "error", err)
	}
}
