package dashboard

import (
	"slices"
	"time"
)

// A timeaxis maps the time a timeline draws onto its width, compressing
// idle stretches: a stretch in which no step was queued or running (a
// durable sleep, a wait for an event or for child runs, a backoff before a
// retry) longer than all the busy time of the run is drawn as a break of
// breakW units, so that the steps around a 24-hour sleep keep a readable
// width. Labels say the real durations; only the geometry is compressed.
type timeaxis struct {
	pieces []axisPiece
}

// axisPiece is a stretch of time drawn from X to X+W: linearly, or, for a
// Break, compressed to a fixed width whatever its length.
type axisPiece struct {
	From, To time.Time
	X, W     float64
	Break    bool
}

const (
	breakW = 96 // the width of a compressed idle stretch
	pieceW = 24 // the least width of a stretch drawn linearly
)

// newTimeaxis lays out the time from start to end over width units
// starting at x0. busy are the stretches in which a step was queued or
// running (an instant is a stretch of no length).
func newTimeaxis(start, end time.Time, busy [][2]time.Time, x0, width float64) timeaxis {
	// Merge the busy stretches, clipped to the axis, in time order.
	slices.SortFunc(busy, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var merged [][2]time.Time
	var busyTotal time.Duration
	for _, b := range busy {
		b[0], b[1] = clampTime(b[0], start, end), clampTime(b[1], start, end)
		if n := len(merged); n > 0 && !b[0].After(merged[n-1][1]) {
			if b[1].After(merged[n-1][1]) {
				merged[n-1][1] = b[1]
			}
			continue
		}
		merged = append(merged, b)
	}
	for _, b := range merged {
		busyTotal += b[1].Sub(b[0])
	}
	// The gaps between them, and before the first and after the last, are
	// idle; the long ones become breaks.
	var pieces []axisPiece
	long := func(from, to time.Time) bool {
		d := to.Sub(from)
		return d > busyTotal && d > end.Sub(start)/10
	}
	add := func(from, to time.Time, brk bool) {
		if to.Before(from) || to.Equal(from) && (brk || len(pieces) > 0) {
			return // a busy instant is a piece of its own only at the start
		}
		if n := len(pieces); n > 0 && !brk && !pieces[n-1].Break {
			pieces[n-1].To = to
			return
		}
		pieces = append(pieces, axisPiece{From: from, To: to, Break: brk})
	}
	at := start
	for _, b := range merged {
		add(at, b[0], long(at, b[0]))
		add(b[0], b[1], false)
		at = laterTime(at, b[1])
	}
	add(at, end, long(at, end))
	if len(pieces) == 0 {
		pieces = []axisPiece{{From: start, To: end}}
	}
	// Breaks take breakW each; the linear stretches share the rest by
	// their lengths, each at least pieceW.
	rest, linear := width, time.Duration(0)
	nLinear := 0
	for _, p := range pieces {
		if p.Break {
			rest -= breakW
		} else {
			linear += p.To.Sub(p.From)
			nLinear++
		}
	}
	rest -= float64(nLinear) * pieceW
	x := x0
	for i := range pieces {
		p := &pieces[i]
		p.X = x
		switch {
		case p.Break:
			p.W = breakW
		case linear > 0:
			p.W = pieceW + max(rest, 0)*float64(p.To.Sub(p.From))/float64(linear)
		default:
			p.W = pieceW + max(rest, 0)/float64(nLinear)
		}
		x += p.W
	}
	return timeaxis{pieces: pieces}
}

// x is where t is drawn.
func (a timeaxis) x(t time.Time) float64 {
	ps := a.pieces
	if !t.After(ps[0].From) {
		return ps[0].X
	}
	for _, p := range ps {
		if t.After(p.To) {
			continue
		}
		d := p.To.Sub(p.From)
		if d <= 0 {
			return p.X
		}
		return p.X + p.W*float64(t.Sub(p.From))/float64(d)
	}
	last := ps[len(ps)-1]
	return last.X + last.W
}

// breaks are the compressed stretches.
func (a timeaxis) breaks() []axisPiece {
	var out []axisPiece
	for _, p := range a.pieces {
		if p.Break {
			out = append(out, p)
		}
	}
	return out
}

func clampTime(t, lo, hi time.Time) time.Time {
	switch {
	case t.Before(lo):
		return lo
	case t.After(hi):
		return hi
	}
	return t
}

func laterTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlierTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
