package clock

import (
	"container/heap"
	"sync"
	"time"
)

// Virtual is a clock that moves only when Advance or Set is called. Timers
// due by the new time fire in order of their due time (then creation
// order), each with the clock reading its due time, before Advance returns.
// It is safe for concurrent use.
type Virtual struct {
	mu     sync.Mutex
	now    time.Time
	timers timerHeap
	seq    int64
}

// NewVirtual returns a virtual clock reading start.
func NewVirtual(start time.Time) *Virtual { return &Virtual{now: start} }

// Now is the clock's current reading.
func (v *Virtual) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// NewTimer returns a timer that fires when the clock reaches now + d.
func (v *Virtual) NewTimer(d time.Duration) Timer {
	t := &vtimer{clock: v, ch: make(chan time.Time, 1)}
	v.add(t, d)
	return t
}

// AfterFunc calls f (synchronously, from Advance) when the clock reaches
// now + d.
func (v *Virtual) AfterFunc(d time.Duration, f func()) Timer {
	t := &vtimer{clock: v, fn: f}
	v.add(t, d)
	return t
}

func (v *Virtual) add(t *vtimer, d time.Duration) {
	v.mu.Lock()
	v.seq++
	t.due, t.seq, t.index = v.now.Add(d), v.seq, -1
	if d > 0 {
		heap.Push(&v.timers, t)
		v.mu.Unlock()
		return
	}
	// Already due: fire at once, as time.NewTimer(0) would.
	t.fired = true
	v.mu.Unlock()
	t.fire(t.due)
}

// Advance moves the clock forward by d, firing every timer that falls due.
func (v *Virtual) Advance(d time.Duration) {
	v.mu.Lock()
	target := v.now.Add(d)
	v.mu.Unlock()
	v.Set(target)
}

// Set moves the clock to t (never backwards), firing every timer due by t.
func (v *Virtual) Set(t time.Time) {
	for {
		v.mu.Lock()
		if len(v.timers) == 0 || v.timers[0].due.After(t) {
			if t.After(v.now) {
				v.now = t
			}
			v.mu.Unlock()
			return
		}
		next := heap.Pop(&v.timers).(*vtimer)
		if next.due.After(v.now) {
			v.now = next.due
		}
		next.fired = true
		v.mu.Unlock()
		next.fire(next.due)
	}
}

// NextDue returns when the earliest pending timer fires, or false when no
// timer is pending.
func (v *Virtual) NextDue() (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.timers) == 0 {
		return time.Time{}, false
	}
	return v.timers[0].due, true
}

type vtimer struct {
	clock *Virtual
	due   time.Time
	seq   int64
	index int
	fired bool
	ch    chan time.Time
	fn    func()
}

func (t *vtimer) fire(at time.Time) {
	if t.fn != nil {
		t.fn()
		return
	}
	select {
	case t.ch <- at:
	default:
	}
}

func (t *vtimer) C() <-chan time.Time { return t.ch }

func (t *vtimer) Stop() bool {
	v := t.clock
	v.mu.Lock()
	defer v.mu.Unlock()
	if t.fired || t.index < 0 {
		return false
	}
	heap.Remove(&v.timers, t.index)
	t.index = -1
	return true
}

type timerHeap []*vtimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*vtimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
