package ops_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// storeRun creates a one-task run with the id given, straight in the
// store: the engine's ids are random.
func storeRun(t *testing.T, h *trellistest.Harness, id, tenant string) uuid.UUID {
	t.Helper()
	res, err := h.Store.CreateRuns(t.Context(), store.CreateRuns{Now: h.Clock.Now(), Runs: []store.NewRun{{
		ID: uuid.MustParse(id), Workflow: "chain", Version: "chain@v1", Tenant: tenant, Input: []byte(`{}`),
		Tasks: []store.NewTask{{Step: 0, Kind: store.KindCode, MaxAttempts: 1}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(time.Second)
	return res[0].ID
}

func TestFindRun(t *testing.T) {
	h := trellistest.New(t)
	admin := ops.New(h.Engine)
	first := storeRun(t, h, "abcd0000-0000-7000-8000-000000000001", "acme")
	second := storeRun(t, h, "abcd0000-0000-7000-8000-000000000002", "beta")
	other := storeRun(t, h, "abce0000-0000-7000-8000-000000000001", "acme")

	for ref, want := range map[string]uuid.UUID{
		"abce0000":                             other,
		"ABCE0000-":                            other,
		"abcd0000000070008000000000000001":     first,
		"abcd0000-0000-7000-8000-000000000002": second,
		// A whole id is taken as it is, without a read.
		"{0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b}": uuid.MustParse("0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b"),
	} {
		if got, err := admin.FindRun(t.Context(), ref); err != nil || got != want {
			t.Errorf("FindRun(%q) = %v, %v; want %v", ref, got, err, want)
		}
	}

	_, err := admin.FindRun(t.Context(), "abcd0000")
	var amb *ops.AmbiguousRunError
	if !errors.As(err, &amb) || len(amb.Runs) != 2 || amb.Runs[0].ID != second || amb.Runs[1].ID != first || amb.More {
		t.Errorf("FindRun(abcd0000) = %v (%+v); want both abcd runs, newest first", err, amb)
	} else if want := `2 runs have ids that begin with "abcd0000": give more of the id`; err.Error() != want {
		t.Errorf("FindRun(abcd0000) = %q, want %q", err, want)
	}

	if _, err := admin.FindRun(t.Context(), "abcf0000"); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("FindRun(abcf0000) = %v, want ErrRunNotFound", err)
	}
	for _, bad := range []string{"", "abcd000", "%", "_", "abcd%", "not-a-run", strings.Repeat("f", 10_000)} {
		_, err := admin.FindRun(t.Context(), bad)
		if err == nil || errors.Is(err, runtime.ErrRunNotFound) || len(err.Error()) > 300 {
			t.Errorf("FindRun(%.20q) = %v; want a short error saying what a run id is", bad, err)
		}
		if ops.CheckRunRef(bad) == nil {
			t.Errorf("CheckRunRef(%.20q) took it", bad)
		}
	}

	// Listings take a prefix too.
	page, err := admin.ListRuns(t.Context(), ops.RunFilter{IDPrefix: "ABCD0000", Tenant: "acme"})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != first {
		t.Errorf("ListRuns(IDPrefix ABCD0000, tenant acme) = %+v, %v", page, err)
	}
	if err := (ops.RunFilter{IDPrefix: "ab%"}).Validate(); err == nil {
		t.Errorf("Validate took the prefix ab%%")
	}
}
