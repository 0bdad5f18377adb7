package store

import (
	"fmt"

	"github.com/effectivelabs/trellis/schema/spec"
)

// # Priorities and lanes
//
// The ready queue is served in rounds, fair across tenants: each round
// takes one task of each tenant (see memstore/fair.go and trellis_enqueue
// in the Postgres schema). Within a tenant, priorities decide which of its
// queued tasks go first, through lanes. Every queued task is in a lane,
// given by its run's priority and by whether its run is new or in
// progress: a run's root tasks, queued when the run is created, are in
// the run's new lane; every task queued after that (a child whose parents
// resolved, a retry, a woken sleep, a recovered task, the failure
// handler) is in its in-progress lane, just above. So a run under way
// finishes before its tenant's backlog of new runs of the same priority
// starts, instead of waiting behind it.
//
// A task is placed in the round after the last of its tenant's queued
// tasks of its own and higher lanes, or in the current round when there
// is none: it queues behind those only, never behind the tenant's lower
// lanes. A round takes the tenant's tasks placed in it highest lane
// first. The rules that follow:
//
//   - Priority: a task goes ahead of its tenant's lower-lane tasks in
//     later rounds than its own, and first within its round; a backlog
//     in several lanes is shared evenly between them, one task of each a
//     round.
//   - No starvation: a task's round is fixed when it is queued, and later
//     tasks, whatever their priority, never push it back; a low-priority
//     task waits at most as many rounds as the longest queue of its
//     tenant's own and higher lanes when it was queued.
//   - Fairness: a round takes at most one task per lane of a tenant, so a
//     tenant with tasks queued in k lanes gets up to k tasks a round, and
//     a task of an idle tenant waits behind at most that many tasks of
//     each other tenant.
//
// The Postgres store places the tasks one operation queues from the
// queue as it was before the operation, so that tasks of one tenant in
// different lanes queued together do not queue behind each other; the
// memory store places them one at a time.

// Lanes is the number of lanes: lane numbers are 0 to Lanes-1, higher
// first.
const Lanes = 2 * (spec.PriorityHigh + 1)

// Lane returns the lane of a task of a run of the given priority: its new
// lane for the tasks queued when the run is created, its in-progress lane
// for every other. The Postgres store computes the same (trellis_lane).
func Lane(priority int, inProgress bool) int {
	l := 2 * priority
	if inProgress {
		l++
	}
	return l
}

// RunPriority returns the priority a store records for a new run given
// NewRun.Priority p: p, or spec.PriorityNormal when p is zero. It is an error
// for p to be anything else.
func RunPriority(p int) (int, error) {
	switch {
	case p == 0:
		return spec.PriorityNormal, nil
	case spec.ValidPriority(p):
		return p, nil
	}
	return 0, fmt.Errorf("run priority %d is out of range: use %d (low) to %d (high)", p, spec.PriorityLow, spec.PriorityHigh)
}
