package runtime

import (
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// DefaultTenant is the tenant of runs triggered without WithTenant.
const DefaultTenant = "default"

// RunOptions are the trigger options. Use the With functions to set them.
type RunOptions struct {
	// Tenant the run belongs to; the scheduler is fair across tenants.
	Tenant string
	// IdempotencyKey, when set, makes triggering idempotent: a second
	// trigger with the same key (for the same workflow and tenant) returns
	// the first run instead of creating another.
	IdempotencyKey string
	// IdempotencyKeys, set by WithIdempotencyKeys, gives each input of a
	// TriggerMany a key of its own; nil when not given.
	IdempotencyKeys []string
	// Priority, when not zero, is the run's priority (PriorityLow to
	// PriorityHigh), instead of the one the workflow's priority field
	// gives.
	Priority int
	// Tags are the runs' tags (see Tags), set by WithTags and WithTag;
	// nil for none.
	Tags map[string]string
	// Timeout, when positive, bounds the run as a whole (see WithTimeout).
	Timeout time.Duration
	// StartAt, when not zero, delays the run's start to then (see
	// WithStartAt); StartAfter, when positive, by that long after the
	// trigger (see WithStartAfter). The later of the two applies.
	StartAt    time.Time
	StartAfter time.Duration
	// Tx is a store transaction to create the run in, so that the run
	// exists if and only if the caller's transaction commits. Only stores
	// that support transactions accept it (on Postgres, pgstore.Tx(tx)
	// wraps a pgx.Tx).
	Tx store.Tx
	// EventKey, set by WithEventKey, is the key a publish delivers its
	// event with to the steps that wait for it by key. Only a publish
	// takes it; a trigger, Signal and Send refuse it.
	EventKey string
}

// RunOption sets a trigger option.
type RunOption func(*RunOptions)

// WithTenant sets the tenant a run belongs to.
func WithTenant(tenant string) RunOption {
	return func(o *RunOptions) { o.Tenant = tenant }
}

// WithIdempotencyKey makes the trigger of one run idempotent under key
// (Trigger, Run; for TriggerMany, see WithIdempotencyKeys).
func WithIdempotencyKey(key string) RunOption {
	return func(o *RunOptions) { o.IdempotencyKey = key }
}

// WithIdempotencyKeys makes TriggerMany idempotent input by input, so
// that a caller may retry a batch safely: keys[i] is the idempotency key
// of inputs[i], one key per input, in order, and an empty string means no
// key for that input. Each key means what WithIdempotencyKey means for one
// run: a key that an earlier run of the workflow and tenant holds returns
// that run (with RunRef.Existing set) and creates nothing for its input,
// while the other inputs' runs are created, all in one transaction. A
// key may appear once per call. Only TriggerMany (a generated client's
// RunManyNoWait) accepts it.
func WithIdempotencyKeys(keys ...string) RunOption {
	keys = append([]string{}, keys...) // not nil, even when empty: given
	return func(o *RunOptions) { o.IdempotencyKeys = keys }
}

// WithPriority sets the priority of the runs triggered: PriorityLow (1),
// PriorityNormal (2) or PriorityHigh (3), whatever the workflow's
// priority field says. Within its tenant, a run of higher priority has
// its tasks claimed first; a run of lower priority still gets its turn
// (see docs/concepts/fairness.md, Priorities).
func WithPriority(p int) RunOption {
	return func(o *RunOptions) { o.Priority = p }
}

// WithTimeout gives the runs triggered a deadline: a run still running
// d after it started fails ("run deadline of 1m0s passed"), its running
// steps have their context cancelled, its other unfinished steps and its
// child runs are cancelled, and its onFailure handler runs. It can only
// shorten the workflow's own timeout field: the run's deadline is the
// shorter of the two. For a workflow without one, it sets one.
func WithTimeout(d time.Duration) RunOption {
	return func(o *RunOptions) { o.Timeout = d }
}

// WithStartAt delays the runs triggered until t: each exists at once,
// RUNNING (shown as scheduled, with its start time, by trellis runs and
// the dashboard), can be cancelled, and is found again by its
// idempotency key, but none of its steps is queued before t. At t the
// leader queues its first steps, which then meet the workflow's
// concurrency limits, rate limits and priorities as any run's do; its
// deadline (the workflow's timeout, WithTimeout) counts from then. A
// time not after the trigger's starts the run at once.
func WithStartAt(t time.Time) RunOption {
	return func(o *RunOptions) { o.StartAt = t }
}

// WithStartAfter delays the runs triggered by d: WithStartAt(now + d),
// now by the engine's clock.
func WithStartAfter(d time.Duration) RunOption {
	return func(o *RunOptions) { o.StartAfter = d }
}

// startAt is when a run triggered at now starts: zero for at once.
func (o *RunOptions) startAt(now time.Time) time.Time {
	at := o.StartAt
	if o.StartAfter > 0 && now.Add(o.StartAfter).After(at) {
		at = now.Add(o.StartAfter)
	}
	if !at.After(now) {
		return time.Time{}
	}
	return at
}

// timeout is the timeout of a run of a workflow whose timeout field says
// declared (zero for none): the shorter of that and WithTimeout's.
func (o *RunOptions) timeout(declared time.Duration) time.Duration {
	if o.Timeout > 0 && (declared <= 0 || o.Timeout < declared) {
		return o.Timeout
	}
	return declared
}

// WithTx creates the run inside the caller's store transaction: on
// Postgres, runtime.WithTx(pgstore.Tx(tx)) with tx a pgx.Tx. The run
// exists if and only if tx commits; use it with RunNoWait (Run would wait
// for a run the caller has not committed yet).
func WithTx(tx store.Tx) RunOption {
	return func(o *RunOptions) { o.Tx = tx }
}

// WithEventKey makes a publish (Engine.PublishEvent, a generated
// client's Publish<Event>) deliver its event with key, too, to the steps
// that wait for it by key, in every workflow that has such steps: as
// Send<Event> with key would, workflow by workflow, and once per event
// id. Only a publish takes it: a trigger, Signal and Send refuse it. An
// empty key delivers nothing.
func WithEventKey(key string) RunOption {
	return func(o *RunOptions) { o.EventKey = key }
}

func runOptions(opts []RunOption) RunOptions {
	o := RunOptions{Tenant: DefaultTenant}
	for _, opt := range opts {
		opt(&o)
	}
	if o.Tenant == "" {
		o.Tenant = DefaultTenant
	}
	return o
}

// check checks the options every trigger shares.
func (o *RunOptions) check(workflow string) error {
	if o.Priority != 0 && !ValidPriority(o.Priority) {
		return fmt.Errorf("triggering %s: WithPriority(%d): a priority is PriorityLow (1), PriorityNormal (2) or PriorityHigh (3)", workflow, o.Priority)
	}
	if o.EventKey != "" {
		return fmt.Errorf("triggering %s: WithEventKey is the key a publish delivers its event with; a trigger takes none", workflow)
	}
	if o.Timeout < 0 {
		return fmt.Errorf("triggering %s: WithTimeout(%s): a timeout is positive", workflow, o.Timeout)
	}
	if o.StartAfter < 0 {
		return fmt.Errorf("triggering %s: WithStartAfter(%s): a delay is positive", workflow, o.StartAfter)
	}
	return nil
}

// checkOne checks the options of a trigger of one run of workflow.
func (o *RunOptions) checkOne(workflow string) error {
	if err := o.check(workflow); err != nil {
		return err
	}
	if o.IdempotencyKeys != nil {
		return fmt.Errorf("triggering %s: WithIdempotencyKeys gives each run of a TriggerMany its own key; give one run its key with WithIdempotencyKey", workflow)
	}
	return nil
}

// checkMany checks the options of a TriggerMany of n runs of workflow.
func (o *RunOptions) checkMany(workflow string, n int) error {
	if err := o.check(workflow); err != nil {
		return err
	}
	if o.IdempotencyKey != "" {
		return fmt.Errorf("triggering %s: WithIdempotencyKey names one run, and TriggerMany creates one per input; give each input its own key with WithIdempotencyKeys", workflow)
	}
	if o.IdempotencyKeys == nil {
		return nil
	}
	if len(o.IdempotencyKeys) != n {
		return fmt.Errorf("triggering %s: WithIdempotencyKeys gives %s for %s; give one key per input, in order (\"\" for an input without one)",
			workflow, plural(len(o.IdempotencyKeys), "idempotency key"), plural(n, "input"))
	}
	first := make(map[string]int, n)
	for i, k := range o.IdempotencyKeys {
		if k == "" {
			continue
		}
		if j, dup := first[k]; dup {
			return fmt.Errorf("triggering %s: idempotency key %q is given for inputs %d and %d; a key names one run, so give each input a key of its own", workflow, clip(k), j, i)
		}
		first[k] = i
	}
	return nil
}

// plural says "1 input" or "3 inputs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
