package dashboard

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// What a user who sees only some tenants is not shown, and why: these
// parts of the overview add up every tenant's work.
const (
	scopedActivity = "Run activity adds up every tenant's runs: it is shown to users who see every tenant."
	scopedWorkers  = "Workers serve every tenant: they are shown to users who see every tenant."
)

// visibleRuns lists the runs f selects that u may see, newest first: for
// a user who sees only some tenants, one listing per tenant, merged, at
// most f.Limit runs. Only for summaries: the merged list has no next
// page.
func (d *Dashboard) visibleRuns(ctx context.Context, u User, f ops.RunFilter) ([]ops.Run, error) {
	if !u.Scoped() {
		page, err := d.admin.ListRuns(ctx, f)
		if err != nil {
			return nil, err
		}
		return page.Runs, nil
	}
	tenants := u.Tenants
	if f.Tenant != "" {
		tenants = nil
		if u.Sees(f.Tenant) {
			tenants = []string{f.Tenant}
		}
	}
	var runs []ops.Run
	for _, t := range tenants {
		tf := f
		tf.Tenant = t
		page, err := d.admin.ListRuns(ctx, tf)
		if err != nil {
			return nil, err
		}
		runs = append(runs, page.Runs...)
	}
	slices.SortStableFunc(runs, func(a, b ops.Run) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID.String(), a.ID.String()))
	})
	limit := cmp.Or(f.Limit, ops.DefaultLimit)
	return runs[:min(len(runs), limit)], nil
}

// errNotVisible is a run of a tenant the user does not see: the
// dashboard answers it as a run that does not exist.
var errNotVisible = runtime.ErrRunNotFound

// checkVisible reports runtime.ErrRunNotFound for a run u may not see
// (or that does not exist), another error for a failed read, or nil.
func (d *Dashboard) checkVisible(ctx context.Context, u User, id uuid.UUID) error {
	if !u.Scoped() {
		return nil
	}
	run, err := d.admin.GetRun(ctx, id)
	if err != nil {
		return err
	}
	if !u.Sees(run.Tenant) {
		return errNotVisible
	}
	return nil
}

// isNotFound reports whether err is a run that does not exist for the
// user.
func isNotFound(err error) bool { return errors.Is(err, runtime.ErrRunNotFound) }
