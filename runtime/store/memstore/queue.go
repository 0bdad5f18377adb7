package memstore

import (
	"container/heap"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/schema/spec"
)

// readyQueue is the fair ready queue (see fair.go), ordered by
// queue id. Entries are invalidated lazily: an entry whose task has moved
// on (its gen changed) is dropped when it reaches the front.
type readyQueue struct {
	entries  entryHeap
	tenants  map[string]*tenantState
	consumed int64 // block of the last claimed entry
	seq      int64
	// groups counts the groups handed out, one per tenant ever met; a
	// tenant's group is the count modulo blockLength (see fair.go).
	groups int64
}

type tenantState struct {
	group int64
	// blocks holds, per lane, the block of the tenant's last task queued
	// in that lane, -1 before the first.
	blocks  [store.Lanes]int64
	running int
	queued  int // tasks QUEUED
	// valid counts the tenant's valid entries, by workflow version and
	// lane (see highestLane).
	valid map[runVersion]*[store.Lanes]int
}

// runVersion is a workflow version, with its workflow's name.
type runVersion struct{ workflow, version string }

type entry struct {
	id   int64
	lane int
	seq  int64 // order of queueing, among entries of one id
	task *task
	gen  int
	wake bool
}

func newReadyQueue() readyQueue {
	return readyQueue{tenants: map[string]*tenantState{}}
}

func (q *readyQueue) tenant(name string) *tenantState {
	ts, ok := q.tenants[name]
	if !ok {
		ts = &tenantState{group: q.groups % blockLength}
		q.groups++
		for l := range ts.blocks {
			ts.blocks[l] = -1
		}
		q.tenants[name] = ts
	}
	return ts
}

func (q *readyQueue) tenantRunning(name string, delta int) { q.tenant(name).running += delta }

func (q *readyQueue) tenantQueued(name string, delta int) { q.tenant(name).queued += delta }

// counted adds delta to the count of t's valid entries in lane.
func (q *readyQueue) counted(t *task, lane, delta int) {
	ts := q.tenant(t.run.rec.Tenant)
	if ts.valid == nil {
		ts.valid = map[runVersion]*[store.Lanes]int{}
	}
	key := runVersion{t.run.rec.Workflow, t.run.rec.Version}
	lanes, ok := ts.valid[key]
	if !ok {
		lanes = &[store.Lanes]int{}
		ts.valid[key] = lanes
	}
	lanes[lane] += delta
}

// void records that t's queue entry, if it has a valid one, is void now:
// t moved on (setStatus bumps its gen).
func (q *readyQueue) void(t *task) {
	if t.entryLane > 0 {
		q.counted(t, t.entryLane-1, -1)
		t.entryLane = 0
	}
}

// head returns the first valid entry of the given workflow versions (all
// when none are given) that a worker with the given labels may claim,
// dropping invalid entries from the front.
func (q *readyQueue) head(versions, labels []string) (*entry, bool) {
	for len(q.entries) > 0 && !q.entries[0].valid() {
		heap.Pop(&q.entries)
	}
	if len(q.entries) == 0 {
		return nil, false
	}
	if e := q.entries[0]; of(e, versions) && spec.LabelsInclude(labels, e.task.labels) {
		return e, true
	}
	// The front is another engine's: look through the whole queue.
	var head *entry
	for _, e := range q.entries {
		if e.valid() && of(e, versions) && spec.LabelsInclude(labels, e.task.labels) && (head == nil || entryHeap([]*entry{e, head}).Less(0, 1)) {
			head = e
		}
	}
	return head, head != nil
}

// highestLane returns the highest lane in which tenant has valid entries
// of the given workflow versions (all when none are given), -1 if none.
func (q *readyQueue) highestLane(tenant string, versions []string) int {
	highest := -1
	for key, lanes := range q.tenant(tenant).valid {
		if len(versions) > 0 && !slices.Contains(versions, key.version) {
			continue
		}
		for l := store.Lanes - 1; l > highest; l-- {
			if lanes[l] > 0 {
				highest = l
			}
		}
	}
	return highest
}

// of reports whether e is of one of the given workflow versions (any
// when none are given).
func of(e *entry, versions []string) bool {
	return len(versions) == 0 || slices.Contains(versions, e.task.run.rec.Version)
}

// frontier is the block being consumed.
func (q *readyQueue) frontier() int64 {
	for len(q.entries) > 0 && !q.entries[0].valid() {
		heap.Pop(&q.entries)
	}
	if len(q.entries) > 0 {
		return blockOf(q.entries[0].id)
	}
	return q.consumed
}

// push queues a task in the given lane (see store.Lane): in the block
// after the tenant's last task of that lane or a higher one, or at the
// frontier.
func (q *readyQueue) push(t *task, wake bool, lane int) {
	ts := q.tenant(t.run.rec.Tenant)
	previous := int64(-1)
	for _, b := range ts.blocks[lane:] {
		previous = max(previous, b)
	}
	block := nextBlock(previous, q.frontier())
	ts.blocks[lane] = block
	q.seq++
	q.void(t)
	t.entryLane = lane + 1
	q.counted(t, lane, +1)
	heap.Push(&q.entries, &entry{id: queueID(ts.group, block), lane: lane, seq: q.seq, task: t, gen: t.gen, wake: wake})
}

// claim takes up to limit valid entries in id order that pass accept,
// leaving the others queued.
func (q *readyQueue) claim(limit int, accept func(*entry) bool) []*entry {
	var out, passed []*entry
	for len(out) < limit && len(q.entries) > 0 {
		e := heap.Pop(&q.entries).(*entry)
		if !e.valid() {
			continue
		}
		if !accept(e) {
			passed = append(passed, e)
			continue
		}
		if b := blockOf(e.id); b > q.consumed {
			q.consumed = b
		}
		q.void(e.task) // out of the queue, whatever happens to the task next
		out = append(out, e)
	}
	for _, e := range passed {
		heap.Push(&q.entries, e)
	}
	return out
}

func (e *entry) valid() bool { return e.gen == e.task.gen }

type entryHeap []*entry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if h[i].id != h[j].id {
		return h[i].id < h[j].id
	}
	if h[i].lane != h[j].lane {
		return h[i].lane > h[j].lane
	}
	return h[i].seq < h[j].seq
}
func (h entryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)   { *h = append(*h, x.(*entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// timerQueue holds durable timers by due time, invalidated like entries.
type timerQueue struct {
	timers timerHeap
	seq    int64
}

type timer struct {
	at   time.Time
	seq  int64
	task *task
	gen  int
}

func (q *timerQueue) push(t *task, at time.Time) {
	q.seq++
	heap.Push(&q.timers, &timer{at: at, seq: q.seq, task: t, gen: t.gen})
}

// next returns the earliest valid timer without removing it.
func (q *timerQueue) next() (*timer, bool) {
	for len(q.timers) > 0 {
		if t := q.timers[0]; t.gen == t.task.gen {
			return t, true
		}
		heap.Pop(&q.timers)
	}
	return nil, false
}

func (q *timerQueue) pop() { heap.Pop(&q.timers) }

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(*timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}
