package dashboard

import (
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// Timeline geometry, in SVG user units.
const (
	timelineW     = 960
	timelineLabel = 150 // room for step names
	rowHeight     = 22
	timelineTop   = 22 // room for the time axis
)

// timeline is a run's attempts over time: a row per step, and a bar per
// span the step spent waiting in the queue, running an attempt, backing
// off before a retry, or sleeping.
type timeline struct {
	W, H  float64
	Rows  []timelineRow
	Ticks []chartTick
	// Start and End bound the time drawn.
	Start, End time.Time
}

type timelineRow struct {
	Step string
	// Y is the row's top; TextY its label's baseline, BarY and BarH its
	// bars' top and height.
	Y, TextY, BarY, BarH float64
	Spans                []span
	Events               []timelineMark
}

// span is one stretch of a step's life. Kind is queued, running,
// backoff or sleeping; Outcome, for a running span, is how the attempt
// ended (completed, failed, cancelled, timed out, released, or running).
type span struct {
	Kind, Outcome string
	Attempt       int
	From, To      time.Time
	X, W          float64
	Title         string
}

// timelineMark is an instant: a skip, or a cancellation of a step that
// never ran.
type timelineMark struct {
	X     float64
	Class string
	Title string
}

// newTimeline reads a run's attempts from its event log. Spans still open
// (the step is running, or waiting) end at now.
func newTimeline(run *ops.RunDetail, events []runtime.Event, now time.Time) timeline {
	tl := timeline{W: timelineW, Start: run.CreatedAt, End: now}
	if !run.FinishedAt.IsZero() {
		tl.End = run.FinishedAt
	}
	for _, ev := range events {
		if ev.At.After(tl.End) {
			tl.End = ev.At
		}
		if !ev.WakeAt.IsZero() && ev.WakeAt.After(tl.End) && run.FinishedAt.IsZero() {
			tl.End = ev.WakeAt
		}
	}
	if !tl.End.After(tl.Start) {
		tl.End = tl.Start.Add(time.Millisecond)
	}
	x := func(t time.Time) float64 {
		return timelineLabel + float64(timelineW-timelineLabel-40)*float64(t.Sub(tl.Start))/float64(tl.End.Sub(tl.Start))
	}
	rows := map[string]int{}
	for _, s := range run.Steps {
		rows[s.Name] = len(tl.Rows)
		y := float64(timelineTop + len(tl.Rows)*rowHeight)
		tl.Rows = append(tl.Rows, timelineRow{Step: s.Name, Y: y, TextY: y + 15, BarY: y + 4, BarH: rowHeight - 8})
	}
	type open struct {
		kind    string
		attempt int
		from    time.Time
	}
	state := map[string]*open{}
	closeSpan := func(step string, at time.Time, outcome string) {
		o := state[step]
		if o == nil {
			return
		}
		delete(state, step)
		i, ok := rows[step]
		if !ok {
			return
		}
		sp := span{Kind: o.kind, Attempt: o.attempt, From: o.from, To: at}
		if o.kind == "running" {
			sp.Outcome = outcome
		}
		sp.X, sp.W = x(sp.From), max(x(sp.To)-x(sp.From), 2)
		sp.Title = spanTitle(step, sp)
		tl.Rows[i].Spans = append(tl.Rows[i].Spans, sp)
	}
	for _, ev := range events {
		outcome := ""
		switch ev.Type {
		case runtime.EventCompleted:
			outcome = "completed"
		case runtime.EventFailed, runtime.EventRetrying:
			outcome = "failed"
		case runtime.EventTimedOut:
			outcome = "timed-out"
		case runtime.EventCancelled:
			outcome = "cancelled"
		case runtime.EventQueued:
			outcome = "released"
		}
		closeSpan(ev.Step, ev.At, outcome)
		switch ev.Type {
		case runtime.EventQueued, runtime.EventWoken:
			state[ev.Step] = &open{kind: "queued", attempt: ev.Attempt, from: ev.At}
		case runtime.EventStarted:
			state[ev.Step] = &open{kind: "running", attempt: ev.Attempt, from: ev.At}
		case runtime.EventRetrying:
			state[ev.Step] = &open{kind: "backoff", attempt: ev.Attempt, from: ev.At}
		case runtime.EventSleeping:
			state[ev.Step] = &open{kind: "sleeping", attempt: ev.Attempt, from: ev.At}
		case runtime.EventWaiting:
			state[ev.Step] = &open{kind: "waiting", attempt: ev.Attempt, from: ev.At}
		case runtime.EventSkipped, runtime.EventCancelled:
			if i, ok := rows[ev.Step]; ok {
				tl.Rows[i].Events = append(tl.Rows[i].Events, timelineMark{
					X: x(ev.At), Class: lowerEvent(ev.Type), Title: fmt.Sprintf("%s %s at %s %s", ev.Step, lowerEvent(ev.Type), ev.At.Format("15:04:05.000"), ev.Detail),
				})
			}
		}
	}
	for step, o := range state {
		end := tl.End
		if o.kind == "backoff" || o.kind == "sleeping" || o.kind == "waiting" || run.FinishedAt.IsZero() {
			end = now
			if end.Before(o.from) {
				end = o.from
			}
			if end.After(tl.End) {
				end = tl.End
			}
		}
		closeSpan(step, end, "running")
	}
	tl.H = float64(timelineTop + len(tl.Rows)*rowHeight + 4)
	for i := range 5 {
		at := tl.Start.Add(time.Duration(i) * tl.End.Sub(tl.Start) / 4)
		tl.Ticks = append(tl.Ticks, chartTick{At: x(at), Label: "+" + shortDuration(at.Sub(tl.Start))})
	}
	return tl
}

func lowerEvent(t runtime.EventType) string {
	switch t {
	case runtime.EventSkipped:
		return "skipped"
	case runtime.EventCancelled:
		return "cancelled"
	}
	return string(t)
}

// spanTitle is a span's tooltip.
func spanTitle(step string, s span) string {
	took := shortDuration(s.To.Sub(s.From))
	switch s.Kind {
	case "running":
		return fmt.Sprintf("%s, attempt %d: ran %s from %s, %s", step, s.Attempt, took, s.From.Format("15:04:05.000"), s.Outcome)
	case "backoff":
		return fmt.Sprintf("%s: waited %s before its next attempt", step, took)
	case "sleeping":
		return fmt.Sprintf("%s: slept %s", step, took)
	case "waiting":
		return fmt.Sprintf("%s: waited %s for its child runs or its event", step, took)
	}
	return fmt.Sprintf("%s: queued %s from %s", step, took, s.From.Format("15:04:05.000"))
}
