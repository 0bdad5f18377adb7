package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/effectivelabs/trellis/runtime/clock"
)

// Cron schedules (WorkflowSpec.Schedules). Every started engine that
// registered a workflow fires its schedules: at each tick it triggers a
// run whose idempotency key names the schedule and the tick, so however
// many engines see a tick, it starts one run. A tick is fired when an
// engine sees it within Config.ScheduleLate of its time; ticks missed by
// longer (no engine with the workflow ran) are skipped, so a process
// that comes back after a day starts at most the latest tick of each
// schedule, not a day of them.

// schedule is a compiled WorkflowSpec schedule.
type schedule struct {
	name   string
	cron   cron.Schedule
	loc    *time.Location
	input  json.RawMessage
	tenant string
}

// compileSchedules parses the schedules of a spec and checks their inputs
// against its input schema (d.input must be compiled).
func (d *Definition) compileSchedules() error {
	for _, s := range d.spec.Schedules {
		c, loc, err := parseCron(s.Cron, s.Timezone)
		if err != nil {
			return fmt.Errorf("compiling workflow %s: schedule %s: %w", d.spec.Name, s.Name, err)
		}
		input := json.RawMessage(s.Input)
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		if err := d.ValidateInput(input); err != nil {
			return fmt.Errorf("compiling workflow %s: schedule %s: %w", d.spec.Name, s.Name, err)
		}
		tenant := s.Tenant
		if tenant == "" {
			tenant = DefaultTenant
		}
		d.schedules = append(d.schedules, schedule{name: s.Name, cron: c, loc: loc, input: input, tenant: tenant})
	}
	return nil
}

// parseCron parses a standard five-field cron expression (or a descriptor
// such as @daily) read in the IANA time zone tz ("" for UTC). Lint
// (gen/workflow, which does not import the engine) reads expressions with
// the same parser and time zone database.
func parseCron(expr, tz string) (cron.Schedule, *time.Location, error) {
	loc := time.UTC
	if tz != "" {
		var err error
		if loc, err = time.LoadLocation(tz); err != nil {
			return nil, nil, fmt.Errorf("time zone %q: %w", tz, err)
		}
	}
	c, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, nil, fmt.Errorf("cron expression %q: %w", expr, err)
	}
	return c, loc, nil
}

// latestTick returns the latest tick of s at or before now and no earlier
// than from.
func (s *schedule) latestTick(from, now time.Time) (time.Time, bool) {
	var last time.Time
	found := false
	// Next(t) is the first tick after t; ticks are seconds apart at least.
	for t := s.cron.Next(from.In(s.loc).Add(-time.Second)); !t.After(now); t = s.cron.Next(t) {
		last, found = t, true
	}
	return last, found
}

// scheduleKey is the idempotency key of the run a schedule starts at a
// tick.
func scheduleKey(name string, tick time.Time) string {
	return "trellis:schedule:" + name + ":" + tick.UTC().Format(time.RFC3339)
}

// fireSchedules triggers the run of the latest due tick of every schedule
// of the registered workflows, unless it started already, and returns how
// many it started. A tick this engine has seen started (by itself or, as
// the trigger's answer said, by another) is not triggered again, so that
// calling it often (the test kit's driver does, each RunUntilIdle) costs
// no store round trip between ticks.
func (e *Engine) fireSchedules(ctx context.Context) (int, error) {
	now := e.clock.Now()
	from := now.Add(-e.cfg.ScheduleLate)
	started := 0
	var firstErr error
	for _, r := range e.registrations() {
		for i := range r.def.schedules {
			s := &r.def.schedules[i]
			tick, ok := s.latestTick(from, now)
			id := r.def.Name() + "/" + s.name
			e.mu.Lock()
			known := e.ticks[id]
			e.mu.Unlock()
			if !ok || !tick.After(known) {
				continue
			}
			ref, err := e.trigger(ctx, r.def, s.input, RunOptions{Tenant: s.tenant, IdempotencyKey: scheduleKey(s.name, tick)})
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("firing schedule %s of %s at %s: %w", s.name, r.def.Name(), tick.UTC().Format(time.RFC3339), err)
				}
				continue
			}
			e.mu.Lock()
			e.ticks[id] = tick
			e.mu.Unlock()
			if !ref.Existing {
				started++
				e.log.Info("schedule fired", "workflow", r.def.Name(), "schedule", s.name, "tick", tick, "run", ref.ID)
			}
		}
	}
	return started, firstErr
}

// nextScheduleTick returns the earliest tick after t of any schedule of a
// registered workflow.
func (e *Engine) nextScheduleTick(t time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	for _, r := range e.registrations() {
		for i := range r.def.schedules {
			s := &r.def.schedules[i]
			if n := s.cron.Next(t.In(s.loc)); !found || n.Before(next) {
				next, found = n, true
			}
		}
	}
	return next, found
}

// scheduleLoop fires schedules at their ticks while the engine runs; it
// returns at once when no registered workflow has a schedule.
func (e *Engine) scheduleLoop(ctx context.Context) {
	if _, ok := e.nextScheduleTick(e.clock.Now()); !ok {
		return
	}
	failing := false
	for {
		_, err := e.fireSchedules(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			failing = true
			e.log.Warn("firing schedules failed; retrying", "error", err)
		case err == nil && failing:
			failing = false
			e.log.Info("firing schedules works again")
		}
		wait := time.Minute
		if next, ok := e.nextScheduleTick(e.clock.Now()); ok {
			wait = min(wait, max(next.Sub(e.clock.Now()), time.Millisecond))
		}
		if failing {
			wait = min(wait, e.cfg.TimerInterval)
		}
		if err := clock.Sleep(ctx, e.clock, wait); err != nil {
			return
		}
	}
}
