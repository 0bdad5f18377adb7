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
// off before a retry, sleeping or waiting. Long idle stretches are
// compressed (see timeaxis) and drawn as Breaks.
type timeline struct {
	W, H  float64
	Rows  []timelineRow
	Ticks []chartTick
	// Breaks are the compressed idle stretches, each labelled with its
	// real length.
	Breaks []timelineBreak
	// Now is where the present is drawn, for a run still running (zero
	// otherwise): spans to its right are planned (a sleep's end).
	Now float64
	// Start and End bound the time drawn.
	Start, End time.Time
}

// timelineBreak is an idle stretch drawn compressed.
type timelineBreak struct {
	X, W, Mid float64
	Label     string
	Title     string
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
// backoff, sleeping or waiting; Outcome, for a running span, is how the
// attempt ended (completed, failed, cancelled, timed out, released, or
// running). A sleep or a backoff not over yet is drawn to when it ends
// (Until), the part after now as planned.
type span struct {
	Kind, Outcome string
	Attempt       int
	From, To      time.Time
	// Until is when a sleep or a backoff ends (its event's WakeAt); zero
	// for other spans.
	Until time.Time
	// Open is true for a span that has not ended yet.
	Open  bool
	X, W  float64
	Title string
	// Label is the text drawn inside a bar wide enough for it, LabelX
	// where.
	Label  string
	LabelX float64
}

// timelineMark is an instant: a skip, or a cancellation of a step that
// never ran.
type timelineMark struct {
	X     float64
	Class string
	Title string
	at    time.Time
}

// newTimeline reads a run's attempts from its event log. Spans still open
// (the step is running, or waiting) end at now, except a sleep or a
// backoff, which is drawn to its end.
func newTimeline(run *ops.RunDetail, events []runtime.Event, now time.Time) timeline {
	running := run.FinishedAt.IsZero()
	tl := timeline{W: timelineW, Start: run.CreatedAt, End: now}
	if !running {
		tl.End = run.FinishedAt
	}
	for _, ev := range events {
		if ev.At.After(tl.End) {
			tl.End = ev.At
		}
		if !ev.WakeAt.IsZero() && ev.WakeAt.After(tl.End) && running {
			tl.End = ev.WakeAt
		}
	}
	if !tl.End.After(tl.Start) {
		tl.End = tl.Start.Add(time.Millisecond)
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
		until   time.Time
	}
	state := map[string]*open{}
	closeSpan := func(step string, at time.Time, outcome string, still bool) {
		o := state[step]
		if o == nil {
			return
		}
		delete(state, step)
		i, ok := rows[step]
		if !ok {
			return
		}
		sp := span{Kind: o.kind, Attempt: o.attempt, From: o.from, To: at, Until: o.until, Open: still}
		if o.kind == "running" {
			sp.Outcome = outcome
		}
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
		closeSpan(ev.Step, ev.At, outcome, false)
		switch ev.Type {
		case runtime.EventQueued, runtime.EventWoken:
			state[ev.Step] = &open{kind: "queued", attempt: ev.Attempt, from: ev.At}
		case runtime.EventStarted:
			state[ev.Step] = &open{kind: "running", attempt: ev.Attempt, from: ev.At}
		case runtime.EventRetrying:
			state[ev.Step] = &open{kind: "backoff", attempt: ev.Attempt, from: ev.At, until: ev.WakeAt}
		case runtime.EventSleeping:
			state[ev.Step] = &open{kind: "sleeping", attempt: ev.Attempt, from: ev.At, until: ev.WakeAt}
		case runtime.EventWaiting:
			state[ev.Step] = &open{kind: "waiting", attempt: ev.Attempt, from: ev.At}
		case runtime.EventSkipped, runtime.EventCancelled:
			if i, ok := rows[ev.Step]; ok {
				tl.Rows[i].Events = append(tl.Rows[i].Events, timelineMark{
					at: ev.At, Class: lowerEvent(ev.Type), Title: fmt.Sprintf("%s %s at %s %s", ev.Step, lowerEvent(ev.Type), ev.At.Format("15:04:05.000"), ev.Detail),
				})
			}
		}
	}
	for step, o := range state {
		end := tl.End
		if o.kind == "backoff" || o.kind == "sleeping" || o.kind == "waiting" || running {
			end = earlierTime(laterTime(now, o.from), tl.End)
		}
		if (o.kind == "backoff" || o.kind == "sleeping") && running && o.until.After(end) {
			end = earlierTime(o.until, tl.End) // drawn to its end, the rest planned
		}
		closeSpan(step, end, "running", running)
	}
	// Lay out the axis: what was queued or running is busy; the rest is
	// idle, and its long stretches are compressed.
	var busy [][2]time.Time
	for _, r := range tl.Rows {
		for _, sp := range r.Spans {
			if sp.Kind == "queued" || sp.Kind == "running" {
				busy = append(busy, [2]time.Time{sp.From, sp.To})
			}
		}
		for _, m := range r.Events {
			busy = append(busy, [2]time.Time{m.at, m.at})
		}
	}
	axis := newTimeaxis(tl.Start, tl.End, busy, timelineLabel, timelineW-timelineLabel-40)
	for i := range tl.Rows {
		r := &tl.Rows[i]
		for j := range r.Spans {
			sp := &r.Spans[j]
			sp.X, sp.W = axis.x(sp.From), max(axis.x(sp.To)-axis.x(sp.From), 2)
			sp.Title = spanTitle(r.Step, *sp, now)
			if label := spanLabel(*sp, now); label != "" && float64(len(label))*5.5+8 <= sp.W {
				sp.Label, sp.LabelX = label, sp.X+4
			}
		}
		for j := range r.Events {
			r.Events[j].X = axis.x(r.Events[j].at)
		}
	}
	if running && !now.Before(tl.Start) && !now.After(tl.End) {
		tl.Now = axis.x(now)
	}
	tl.H = float64(timelineTop + len(tl.Rows)*rowHeight + 4)
	for _, b := range axis.breaks() {
		d := b.To.Sub(b.From)
		tl.Breaks = append(tl.Breaks, timelineBreak{
			X: b.X, W: b.W, Mid: b.X + b.W/2, Label: shortDuration(d),
			Title: fmt.Sprintf("%s in which no step was queued or running (%s to %s UTC), drawn compressed", shortDuration(d), b.From.UTC().Format("2006-01-02 15:04:05"), b.To.UTC().Format("2006-01-02 15:04:05")),
		})
	}
	tl.Ticks = axisTicks(axis, tl.Start)
	return tl
}

// axisTicks marks the start and end of each stretch drawn linearly, and
// quarters of a wide one, with the time since the run's start; a tick
// too close to the one before, or reading the same, is left out.
func axisTicks(axis timeaxis, start time.Time) []chartTick {
	var ticks []chartTick
	add := func(at time.Time) {
		x, label := axis.x(at), "+"+shortDuration(at.Sub(start))
		if n := len(ticks); n > 0 && (x-ticks[n-1].At < 56 || label == ticks[n-1].Label) {
			return
		}
		ticks = append(ticks, chartTick{At: x, Label: label})
	}
	for _, p := range axis.pieces {
		if p.Break {
			continue
		}
		parts := max(1, min(4, int(p.W/160)))
		for i := range parts + 1 {
			add(p.From.Add(time.Duration(i) * p.To.Sub(p.From) / time.Duration(parts)))
		}
	}
	return ticks
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

// spanTitle is a span's tooltip. A sleep or a backoff says how long it
// was to last and until when, as its event planned: a sleep viewed a
// minute after it began is a sleep of 24h, not one of a minute.
func spanTitle(step string, s span, now time.Time) string {
	took := shortDuration(s.To.Sub(s.From))
	planned := func() string {
		if s.Until.IsZero() {
			return took
		}
		return fmt.Sprintf("%s, until %s", shortDuration(s.Until.Sub(s.From)), s.Until.UTC().Format("2006-01-02 15:04:05Z"))
	}
	switch s.Kind {
	case "running":
		if s.Open {
			return fmt.Sprintf("%s, attempt %d: running for %s since %s", step, s.Attempt, shortDuration(max(now.Sub(s.From), 0)), s.From.Format("15:04:05.000"))
		}
		return fmt.Sprintf("%s, attempt %d: ran %s from %s, %s", step, s.Attempt, took, s.From.Format("15:04:05.000"), s.Outcome)
	case "backoff":
		if s.Open {
			return fmt.Sprintf("%s: waiting %s before its next attempt", step, planned())
		}
		return fmt.Sprintf("%s: waited %s before its next attempt", step, took)
	case "sleeping":
		if s.Open {
			return fmt.Sprintf("%s: sleeping %s", step, planned())
		}
		return fmt.Sprintf("%s: slept %s", step, took)
	case "waiting":
		if s.Open {
			return fmt.Sprintf("%s: waiting for its child runs or its event, %s so far", step, took)
		}
		return fmt.Sprintf("%s: waited %s for its child runs or its event", step, took)
	}
	return fmt.Sprintf("%s: queued %s from %s", step, took, s.From.Format("15:04:05.000"))
}

// spanLabel is the text drawn in a bar: what the span was and its real
// length.
func spanLabel(s span, now time.Time) string {
	d := shortDuration(s.To.Sub(s.From))
	switch s.Kind {
	case "running":
		if s.Open {
			return "running " + shortDuration(max(now.Sub(s.From), 0))
		}
		return d
	case "sleeping":
		if s.Open && !s.Until.IsZero() {
			return "sleeping " + shortDuration(s.Until.Sub(s.From))
		}
		return "slept " + d
	case "backoff":
		if s.Open && !s.Until.IsZero() {
			return "retry in " + shortDuration(s.Until.Sub(s.From))
		}
		return "backoff " + d
	case "waiting":
		if s.Open {
			return "waiting " + d
		}
		return "waited " + d
	}
	return ""
}
