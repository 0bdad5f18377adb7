package runtime

import "github.com/effectivelabs/trellis/runtime/store"

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
	// Tx is a store transaction to create the run in, so that the run
	// exists if and only if the caller's transaction commits. Only stores
	// that support transactions accept it (on Postgres, pgstore.Tx(tx)
	// wraps a pgx.Tx).
	Tx store.Tx
}

// RunOption sets a trigger option.
type RunOption func(*RunOptions)

// WithTenant sets the tenant a run belongs to.
func WithTenant(tenant string) RunOption {
	return func(o *RunOptions) { o.Tenant = tenant }
}

// WithIdempotencyKey makes the trigger idempotent under key.
func WithIdempotencyKey(key string) RunOption {
	return func(o *RunOptions) { o.IdempotencyKey = key }
}

// WithTx creates the run inside the caller's store transaction: on
// Postgres, runtime.WithTx(pgstore.Tx(tx)) with tx a pgx.Tx. The run
// exists if and only if tx commits; use it with RunNoWait (Run would wait
// for a run the caller has not committed yet).
func WithTx(tx store.Tx) RunOption {
	return func(o *RunOptions) { o.Tx = tx }
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
