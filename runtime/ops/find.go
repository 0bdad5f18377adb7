package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
)

// MinRunIDPrefix is the fewest hex digits of a run id that FindRun and
// RunFilter.IDPrefix take.
const MinRunIDPrefix = store.MinRunIDPrefix

// ambiguousShown is how many of the runs an ambiguous prefix selects
// AmbiguousRunError names.
const ambiguousShown = 10

// CheckRunRef reports whether FindRun can take ref without reading the
// store: a run id (in any form uuid.Parse reads), or the start of one,
// at least MinRunIDPrefix hex digits, with or without dashes, in any
// case. The error says what is wrong without quoting ref whole.
func CheckRunRef(ref string) error {
	if ref == "" {
		return fmt.Errorf("the run id is empty: give a run id, or at least %d of its first hex digits", MinRunIDPrefix)
	}
	_, err := idPrefix(ref)
	return err
}

// idPrefix reads a run id prefix (the empty string is none): a whole
// run id in any form uuid.Parse reads, or its start.
func idPrefix(ref string) (store.RunIDPrefix, error) {
	if ref == "" {
		return store.RunIDPrefix{}, nil
	}
	if id, err := uuid.Parse(ref); err == nil {
		ref = id.String()
	}
	p, err := store.ParseRunIDPrefix(ref)
	if err != nil {
		return p, fmt.Errorf("%s is %w (a run id is a UUID such as 0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b)", quoteShort(ref), err)
	}
	return p, nil
}

// quoteShort quotes s for a message, cut after 40 bytes.
func quoteShort(s string) string {
	if len(s) <= 40 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…", strings.ToValidUTF8(s[:40], ""))
}

// AmbiguousRunError is a prefix FindRun was given that begins the ids of
// several runs: the person should give more of the id.
type AmbiguousRunError struct {
	// Prefix is the prefix as given.
	Prefix string
	// Runs are the first runs it selects, newest first (as listings show
	// them); More is set when it selects others too.
	Runs []Run
	More bool
}

func (e *AmbiguousRunError) Error() string {
	n := fmt.Sprint(len(e.Runs))
	if e.More {
		n = "more than " + n
	}
	return fmt.Sprintf("%s runs have ids that begin with %s: give more of the id", n, quoteShort(e.Prefix))
}

// FindRun returns the run ref names: a whole run id, returned as it is
// (reading nothing: whether that run exists is for the caller's next
// read to say), or the start of one (see CheckRunRef), which must begin
// the id of exactly one run. A prefix that begins none is an error
// matching runtime.ErrRunNotFound; one that begins several is an
// *AmbiguousRunError naming them. The store finds the runs through its
// index of run ids.
func (a *Admin) FindRun(ctx context.Context, ref string) (runtime.RunID, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return id, nil
	}
	p, err := idPrefix(ref)
	if err != nil {
		return uuid.Nil, err
	}
	runs, err := a.store.ListRuns(ctx, store.RunQuery{IDPrefix: p, Limit: ambiguousShown + 1})
	if err != nil {
		return uuid.Nil, err
	}
	switch len(runs) {
	case 0:
		return uuid.Nil, fmt.Errorf("no run id begins with %s: %w", p, runtime.ErrRunNotFound)
	case 1:
		return runs[0].ID, nil
	}
	e := &AmbiguousRunError{Prefix: ref, More: len(runs) > ambiguousShown}
	for _, r := range runs[:min(len(runs), ambiguousShown)] {
		e.Runs = append(e.Runs, listed(r, nil))
	}
	return uuid.Nil, e
}
