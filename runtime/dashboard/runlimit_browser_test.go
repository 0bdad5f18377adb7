package dashboard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

type deploySteps struct{}

func (deploySteps) Build(context.Context, wf.DeploysInput) error { return nil }

func (deploySteps) Promote(context.Context, wf.DeploysInput, wf.DeploysPromoteParents) error {
	return nil
}

// A user sees, in the runs list and on the run's page, that a run waits
// for a slot of its runConcurrency key (testdata/acceptance/deploys.yaml:
// one deploy of a service at a time), on Postgres.
func TestBrowserRunWaitingForSlot(t *testing.T) {
	ctx := browser(t, 1280, 900)
	b := setup(t, dashboard.Options{Prefix: "/trellis"}, trellistest.WithStore(pgstore.New(pgtest.Pool(t))))
	deploys, err := wf.RegisterDeploys(b.h.Engine, deploySteps{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deploys.RunNoWait(t.Context(), wf.DeploysInput{Service: "api", Version: 1}); err != nil {
		t.Fatal(err)
	}
	second, err := deploys.RunNoWait(t.Context(), wf.DeploysInput{Service: "api", Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	b.h.RunUntilIdle()

	var row, waiting string
	err = runStable(ctx,
		chromedp.Navigate(b.base+"/runs?workflow=deploys"),
		chromedp.WaitVisible(`a[href$="/runs/`+second.ID.String()+`"]`),
		chromedp.Text(`//tr[.//a[contains(@href, "/runs/`+second.ID.String()+`")]]`, &row, chromedp.BySearch),
		chromedp.Navigate(b.base+"/runs/"+second.ID.String()),
		chromedp.WaitVisible("#waiting"),
		chromedp.Text("#waiting", &waiting),
	)
	if err != nil {
		t.Fatalf("reading the waiting run: %v", err)
	}
	if !strings.Contains(row, "waits for a slot of its runConcurrency key") {
		t.Errorf("the runs list's row says %q, want it to say the run waits for a slot", row)
	}
	if !strings.Contains(waiting, "no step starts until a run of the key ends") {
		t.Errorf("the run page says %q, want it to say why the run waits", waiting)
	}
}

type reindexSteps struct{}

func (reindexSteps) Rebuild(context.Context, wf.ReindexInput) error { return nil }

// A user sees on a debounced run's page when it starts, unless a newer
// trigger of its key cancels it (testdata/acceptance/reindex.yaml).
func TestBrowserDebouncedRun(t *testing.T) {
	ctx := browser(t, 1280, 900)
	b := setup(t, dashboard.Options{Prefix: "/trellis"}, trellistest.WithStore(pgstore.New(pgtest.Pool(t))))
	reindex, err := wf.RegisterReindex(b.h.Engine, reindexSteps{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reindex.RunNoWait(t.Context(), wf.ReindexInput{Index: "products", Change: 1})
	if err != nil {
		t.Fatal(err)
	}
	b.h.RunUntilIdle()
	var row, debounced string
	err = runStable(ctx,
		chromedp.Navigate(b.base+"/runs?workflow=reindex"),
		chromedp.WaitVisible(`a[href$="/runs/`+ref.ID.String()+`"]`),
		chromedp.Text(`//tr[.//a[contains(@href, "/runs/`+ref.ID.String()+`")]]`, &row, chromedp.BySearch),
		chromedp.Navigate(b.base+"/runs/"+ref.ID.String()),
		chromedp.WaitVisible("#debounced"),
		chromedp.Text("#debounced", &debounced),
	)
	if err != nil {
		t.Fatalf("reading the debounced run: %v", err)
	}
	if !strings.Contains(row, "debounced: starts in 30s") {
		t.Errorf("the runs list's row says %q, want it to say when the run starts", row)
	}
	if !strings.Contains(debounced, "2030-01-01 00:00:30Z (in 30s) unless a newer trigger of its debounce key cancels it") {
		t.Errorf("the run page says %q, want when the run starts", debounced)
	}
}
