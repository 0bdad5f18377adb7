package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
)

// Cron schedules: the workflow file's (WorkflowSpec.Schedules) and those
// created at run time (Workflow.CreateSchedule, kept in the store; see
// apischedules.go). Every started engine that registered a workflow fires
// both kinds alike: at each tick it triggers a run whose idempotency key
// names the schedule and the tick, so however many engines see a tick, it
// starts one run. A tick is fired when an engine sees it within
// Config.ScheduleLate of its time. An engine that has been firing a
// schedule fires every tick it missed within that window (a busy engine
// that woke late catches up, at most maxCatchUp ticks at once); one that
// has not (it just started) fires only the latest, so that a process
// that comes back after a day starts at most the latest tick of each
// schedule, not a day of them.

// cronScheduler fires the cron schedules of the registered workflows: a
// started engine's loop does, and a Driver's RunUntilIdle (fire). It
// keeps what this engine knows of them (schedules, schedulestate.go) and
// holds what firing them needs; it starts a tick's run with trigger.
type cronScheduler struct {
	state    *schedules
	registry *registry
	store    store.Store
	clock    clock.Clock
	log      *slog.Logger
	limits   SizeLimits
	// late is Config.ScheduleLate; retryEvery, Config.TimerInterval, is
	// how soon the loop fires again after firing failed.
	late, retryEvery time.Duration
	// trigger starts a run (the engine's, runs.go).
	trigger func(ctx context.Context, def *Definition, input json.RawMessage, o RunOptions) (RunRef, error)
}

// maxCatchUp is the most ticks of one schedule an engine fires at once.
const maxCatchUp = 100

// schedule is a compiled schedule, of the workflow file or of the store.
type schedule struct {
	name   string
	cron   cron.Schedule
	loc    *time.Location
	input  json.RawMessage
	tenant string
	// since is when a stored schedule was last changed (created, updated
	// or resumed): no tick before it fires. Zero for the file's.
	since time.Time
}

// check checks the tenant, name and input of the schedules of a
// workflow file against the engine's SizeLimits, so that a schedule
// whose runs every trigger would refuse is refused when registered.
func (c *cronScheduler) check(def *Definition) error {
	l := &c.limits
	var errs []error
	for _, s := range def.schedules {
		for _, err := range []error{
			l.checkTenant(s.tenant),
			l.checkIdempotencyKey("the idempotency key of its runs", scheduleKey(s.name, time.Time{})),
			l.checkInput(s.input),
		} {
			if err != nil {
				errs = append(errs, fmt.Errorf("schedule %s: %w", clip(s.name), err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("registering workflow %s: %w", def.Name(), errors.Join(errs...))
	}
	return nil
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
// such as @daily or @every 15m) read in the IANA time zone tz ("" for
// UTC). Lint (gen/internal/workflow, which does not import the engine) reads
// expressions with the same parser and time zone database.
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
	if every, ok := c.(cron.ConstantDelaySchedule); ok {
		c = everySchedule{every.Delay}
	}
	return c, loc, nil
}

// everySchedule is @every d with its ticks at whole multiples of d since
// the zero time (for a d that divides a day, such as 15m: :00, :15, :30,
// :45 UTC). robfig/cron counts @every from the time it is asked about,
// so engines asking at different times would disagree on the ticks, and
// each tick of each engine would start a run; these ticks are the same
// for every engine.
type everySchedule struct{ every time.Duration }

func (s everySchedule) Next(t time.Time) time.Time {
	return t.Truncate(s.every).Add(s.every)
}

// dueTicks returns the ticks of s in [from, now], in order, the latest
// limit of them.
func (s *schedule) dueTicks(from, now time.Time, limit int) []time.Time {
	var out []time.Time
	// Next(t) is the first tick after t; ticks are a second apart at least.
	for t := s.cron.Next(from.In(s.loc).Add(-time.Second)); !t.After(now); t = s.cron.Next(t) {
		if t.Before(from) {
			continue
		}
		out = append(out, t)
		if len(out) > limit {
			out = out[1:]
		}
	}
	return out
}

// next returns the first tick of s after t.
func (s *schedule) next(t time.Time) time.Time {
	if t.Before(s.since) {
		t = s.since.Add(-time.Nanosecond)
	}
	return s.cron.Next(t.In(s.loc))
}

// scheduleKey is the idempotency key of the run a schedule starts at a
// tick.
func scheduleKey(name string, tick time.Time) string {
	return "trellis:schedule:" + name + ":" + tick.UTC().Format(time.RFC3339)
}

// scheduled is a registered workflow with its schedules, the file's and
// the store's.
type scheduled struct {
	reg       *registration
	schedules []schedule
}

// all returns the schedules of every registered workflow: the
// file's, then those created at run time as this engine last read them.
func (c *cronScheduler) all() []scheduled {
	return c.state.of(c.registry.registrations())
}

// fire triggers the runs of the due ticks of every schedule of
// the registered workflows, unless they started already, and returns how
// many it started. It first reads the schedules created at run time when
// Config.ScheduleRefresh has passed since it last did (or this engine
// changed one). A tick this engine has seen started (by itself or, as the
// trigger's answer said, by another) is not triggered again, so that
// calling it often (the test kit's driver does, each RunUntilIdle) costs
// no store round trip between ticks.
func (c *cronScheduler) fire(ctx context.Context) (int, error) {
	firstErr := c.refresh(ctx)
	now := c.clock.Now()
	from := now.Add(-c.late)
	started := 0
	for _, w := range c.all() {
		def := w.reg.def
		for i := range w.schedules {
			s := &w.schedules[i]
			id := def.Name() + "/" + s.name
			known := c.state.lastTick(id)
			lo := from
			if s.since.After(lo) {
				lo = s.since
			}
			if !known.IsZero() && !known.Before(lo) {
				lo = known.Add(time.Second)
			}
			ticks := s.dueTicks(lo, now, maxCatchUp)
			if known.IsZero() && len(ticks) > 1 {
				ticks = ticks[len(ticks)-1:] // an engine that just started fires the latest tick only
			}
			for _, tick := range ticks {
				ref, err := c.trigger(ctx, def, s.input, RunOptions{Tenant: s.tenant, IdempotencyKey: scheduleKey(s.name, tick)})
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("firing schedule %s of %s at %s: %w", s.name, def.Name(), tick.UTC().Format(time.RFC3339), err)
					}
					break
				}
				c.state.started(id, tick)
				if !ref.Existing {
					started++
					c.log.Info("schedule fired", "workflow", def.Name(), "schedule", s.name, "tick", tick, "run", ref.ID)
				}
			}
		}
	}
	return started, firstErr
}

// nextTick returns the earliest tick after t of any schedule of a
// registered workflow, as far as this engine knows them.
func (c *cronScheduler) nextTick(t time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	for _, w := range c.all() {
		for i := range w.schedules {
			if n := w.schedules[i].next(t); !found || n.Before(next) {
				next, found = n, true
			}
		}
	}
	return next, found
}

// loop fires schedules at their ticks while the engine runs, and
// reads the schedules created at run time every Config.ScheduleRefresh;
// it returns at once when no workflow is registered.
func (c *cronScheduler) loop(ctx context.Context) {
	if len(c.registry.registrations()) == 0 {
		return
	}
	failing := false
	for {
		_, err := c.fire(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			failing = true
			c.log.Warn("firing schedules failed; retrying", "error", err)
		case err == nil && failing:
			failing = false
			c.log.Info("firing schedules works again")
		}
		wait := min(time.Minute, c.state.untilRefresh(c.clock.Now()))
		if next, ok := c.nextTick(c.clock.Now()); ok {
			wait = min(wait, max(next.Sub(c.clock.Now()), time.Millisecond))
		}
		if failing {
			wait = min(wait, c.retryEvery)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return
		}
	}
}

// sleep sleeps for d, or less when this engine changes a
// stored schedule meanwhile; it returns ctx's error when ctx ended.
func (c *cronScheduler) sleep(ctx context.Context, d time.Duration) error {
	wake, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.state.changed:
			cancel()
		case <-wake.Done():
		}
	}()
	_ = clock.Sleep(wake, c.clock, d)
	return ctx.Err()
}
