package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/termtext"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// Every command that takes a run takes its id or a unique start of it
// (ops.FindRun): at least ops.MinRunIDPrefix hex digits, with or without
// dashes, in any case.

// checkRunRefs reports every one of refs that is neither a run id nor the
// start of one, before anything is read.
func checkRunRefs(refs ...string) error {
	var errs []error
	for _, r := range refs {
		errs = append(errs, ops.CheckRunRef(r))
	}
	return errors.Join(errs...)
}

// findRuns returns the runs refs name, in order. A prefix that begins
// several runs' ids is printed to stderr with those runs, and answered
// with ExitUsage; one that begins none with ExitProblems; a failed read is
// the error. Every ref is looked up, so that all problems are printed at
// once; the code is -1 when there are none.
func findRuns(ctx context.Context, a *ops.Admin, name string, stderr io.Writer, refs ...string) ([]uuid.UUID, int, error) {
	ids := make([]uuid.UUID, 0, len(refs))
	code := -1
	for _, ref := range refs {
		id, err := a.FindRun(ctx, ref)
		var amb *ops.AmbiguousRunError
		switch {
		case errors.As(err, &amb):
			printAmbiguous(stderr, name, amb)
			code = ExitUsage
		case errors.Is(err, runtime.ErrRunNotFound):
			fmt.Fprintf(stderr, "trellis %s: %s\n", name, termtext.Text(err.Error()))
			if code < 0 {
				code = ExitProblems
			}
		case err != nil:
			return nil, 0, err
		default:
			ids = append(ids, id)
		}
	}
	return ids, code, nil
}

// findRun is findRuns for one run.
func findRun(ctx context.Context, a *ops.Admin, name string, stderr io.Writer, ref string) (uuid.UUID, int, error) {
	ids, code, err := findRuns(ctx, a, name, stderr, ref)
	if err != nil || code >= 0 {
		return uuid.Nil, code, err
	}
	return ids[0], -1, nil
}

// printAmbiguous says which runs a prefix begins the ids of, as a usage
// error: the person picks one and gives more of its id.
func printAmbiguous(w io.Writer, name string, e *ops.AmbiguousRunError) {
	fmt.Fprintf(w, "trellis %s: %s\n\n", name, termtext.Text(e.Error()))
	t := newTable(w, "ID", "WORKFLOW", "TENANT", "STATUS", "CREATED")
	for _, r := range e.Runs {
		t.row(r.ID.String(), truncate(r.Workflow, 24), truncate(r.Tenant, 20), string(r.Status), timestamp(&r.CreatedAt))
	}
	_ = t.flush()
	if e.More {
		fmt.Fprintln(w, "... and more")
	}
}
