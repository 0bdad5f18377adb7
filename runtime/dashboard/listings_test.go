package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/store"
)

// A run whose stored input the where condition cannot read (here a string
// where the schema declares a number, as a run of an older schema may
// hold) is left out of the run list with a note naming it; the page still
// lists the others.
func TestRunsWhereLeavesOutOddRuns(t *testing.T) {
	b := setup(t, dashboard.Options{})
	ok := b.trigger(`{"amount": 7}`)
	r, err := b.h.Store.GetRun(t.Context(), ok)
	if err != nil {
		t.Fatal(err)
	}
	odd := uuid.Must(uuid.NewV7())
	if _, err := b.h.Store.CreateRuns(t.Context(), store.CreateRuns{Now: b.h.Now(), Runs: []store.NewRun{{
		ID: odd, Workflow: r.Workflow, Version: r.Version, Tenant: r.Tenant, Input: []byte(`{"amount": "lots"}`),
	}}}); err != nil {
		t.Fatal(err)
	}
	body := b.page(`/runs?workflow=probe&where=input.amount+%3E+6`, http.StatusOK)
	if !strings.Contains(body, ok.String()) || !strings.Contains(body, "1 run could not be evaluated") || !strings.Contains(body, odd.String()) {
		t.Errorf("the run list under where, with one odd run: want run %s listed and a note naming run %s; body:\n%s", ok, odd, body)
	}
}
