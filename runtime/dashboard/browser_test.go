package dashboard_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// chromium returns the path of Debian's headless-capable chromium, or
// skips the test without it, unless TRELLIS_REQUIRE_CHROMIUM=1 (CI sets
// it), which fails the test instead. TRELLIS_CHROMIUM names another
// binary.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("TRELLIS_CHROMIUM"), "chromium", "/usr/bin/chromium"} {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("TRELLIS_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium is required (TRELLIS_REQUIRE_CHROMIUM=1) but not installed: apt-get install chromium, or set TRELLIS_CHROMIUM")
	}
	t.Skip("no chromium: apt-get install chromium to run the browser tests (TRELLIS_REQUIRE_CHROMIUM=1 fails instead)")
	return ""
}

// browser starts a headless chromium for the test and returns a context
// of its first tab, which ends (and stops the browser) with the test.
func browser(t *testing.T, width, height int64) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // CI runs as root, where chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.WindowSize(int(width), int(height)),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(alloc)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
	})
	// Accept every confirmation the page asks for, as a user pressing OK.
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
	if err := chromedp.Run(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// liveEngine is a started engine on a fresh Postgres schema, running the
// probe workflow on real time, and a dashboard over the same schema
// through an engine of its own that is never started, as trellis
// dashboard does, with the options configure sets. It returns the probe,
// its workflow on the started engine, the dashboard's URL and the
// started engine.
func liveEngine(t *testing.T, configure ...func(*dashboard.Options)) (*probe, *runtime.Workflow, string, *runtime.Engine) {
	t.Helper()
	pool := pgtest.Pool(t)
	engine, err := runtime.New(runtime.Config{
		Store: pgstore.New(pool), PollInterval: 50 * time.Millisecond, TimerInterval: 100 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond, StaleAfter: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{}
	w := p.register(t, engine)
	if err := engine.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Stop(context.Background()) })

	viewer, err := runtime.New(runtime.Config{Store: pgstore.New(pool)})
	if err != nil {
		t.Fatal(err)
	}
	opts := dashboard.Options{Prefix: "/trellis", PollInterval: 200 * time.Millisecond}
	for _, c := range configure {
		c(&opts)
	}
	dash, err := dashboard.New(ops.New(viewer), opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dash)
	t.Cleanup(func() {
		dash.Close()
		srv.Close()
	})
	return p, w, srv.URL + "/trellis", engine
}

// runStable runs actions that end in at most one that changes the page
// (a click), again when a live update replaced a node the browser had
// found before the action reached it, up to three times: a person would
// find it again too.
func runStable(ctx context.Context, actions ...chromedp.Action) error {
	var err error
	for range 3 {
		if err = chromedp.Run(ctx, actions...); err == nil || !lostNode(err) {
			return err
		}
	}
	return err
}

// lostNode says whether err is the browser's answer about a node a live
// update replaced while an action held it. Chrome words it two ways.
func lostNode(err error) bool {
	return strings.Contains(err.Error(), "Could not find node") || strings.Contains(err.Error(), "No node with given id")
}

// A user opens a failed run from the overview, sees the failed step
// highlighted, opens its details from the DAG, presses retry (and
// confirms), and watches the run complete without reloading the page.
func TestBrowserRetryFailedRun(t *testing.T) {
	ctx := browser(t, 1280, 1000)
	p, w, base, _ := liveEngine(t)
	p.failing.Store(true)
	ref, err := w.Trigger(t.Context(), []byte(`{"note":"card expired","amount":1200}`), runtime.WithTenant("acme"))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Wait(t.Context(), ref.ID); res == nil || res.Status != runtime.RunFailed {
		t.Fatalf("the run ended %v, %v; want FAILED", res, err)
	}
	p.failing.Store(false) // retried, charge succeeds

	runLink := fmt.Sprintf(`a[href="/trellis/runs/%s"]`, ref.ID)
	failedNode := `g.node.s-failed[data-step="charge"]`
	var fill, failure string
	err = runStable(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(runLink),
		chromedp.Click(runLink),
	)
	if err == nil {
		err = runStable(ctx,
			chromedp.WaitVisible(failedNode),
			chromedp.AttributeValue(failedNode+" rect", "fill", &fill, nil),
			chromedp.Text("#failure", &failure),
			chromedp.Click(failedNode+" a"),
		)
	}
	if err != nil {
		t.Fatalf("opening the failed run: %v", err)
	}
	// The page reacts to the click on hashchange, which the browser fires
	// after the click returns: wait for it rather than look at once.
	var stepOpen bool
	err = chromedp.Run(ctx, chromedp.Poll(
		`document.getElementById("step-1").open && document.querySelector('g.node[data-step="charge"]').classList.contains("selected")`,
		&stepOpen, chromedp.WithPollingTimeout(10*time.Second)))
	if fill != "#ffc9c9" {
		t.Errorf("the failed step is filled %q, want the failed colour", fill)
	}
	if want := "card declined: card expired"; !strings.Contains(failure, want) || !strings.Contains(failure, "charge") {
		t.Errorf("the failure box says %q, want step charge and %q", failure, want)
	}
	if err != nil || !stepOpen {
		t.Errorf("clicking the failed step in the DAG did not open and mark its details within 10s: %v", err)
	}

	var status string
	var sameDocument bool
	var updates string
	// Live updates replace nodes while the test reads them: an action
	// that loses its node is tried again (runStable). A click that loses
	// its node fails before it is dispatched, so trying it again never
	// retries the run twice.
	err = runStable(ctx, chromedp.Click("#retry")) // confirmed by the dialog listener
	if err == nil {
		err = runStable(ctx,
			chromedp.WaitVisible("#notice"),
			chromedp.Evaluate(`window.trellisTestMarker = "before"`, nil),
		)
	}
	if err == nil {
		err = runStable(ctx,
			chromedp.WaitVisible(`#run-status .badge.s-completed`),
			chromedp.WaitVisible(`g.node.s-completed[data-step="ship"]`),
			chromedp.Text("#run-status", &status),
			chromedp.Evaluate(`window.trellisTestMarker === "before"`, &sameDocument),
			chromedp.AttributeValue("#live", "data-updates", &updates, nil),
		)
	}
	if err != nil {
		t.Fatalf("retrying and watching the run: %v", err)
	}
	if status != "COMPLETED" || !sameDocument || updates == "" {
		t.Errorf("after retry: status %q, same document %v, live updates %q; want COMPLETED, shown live without a reload", status, sameDocument, updates)
	}
	if res, err := w.Result(t.Context(), ref.ID); err != nil || res.Status != runtime.RunCompleted {
		t.Errorf("the run is %v, %v after retrying it from the page", res, err)
	}
}

// A bad where condition shows its type error on the runs page, in the
// browser as in the HTML.
func TestBrowserWhereError(t *testing.T) {
	ctx := browser(t, 1280, 900)
	_, w, base, _ := liveEngine(t)
	if _, err := w.Trigger(t.Context(), []byte(`{"note":"x","amount":3}`)); err != nil {
		t.Fatal(err)
	}
	var problem string
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/runs"),
		chromedp.WaitVisible(`select[name="workflow"]`),
		chromedp.SetValue(`select[name="workflow"]`, "probe"),
		chromedp.SendKeys(`input[name="where"]`, `input.amont > 1`),
		chromedp.Submit(`#filters`),
		chromedp.WaitVisible("#problem"),
		chromedp.Text("#problem", &problem),
	)
	if err != nil {
		t.Fatalf("filtering with a misspelt field: %v", err)
	}
	if !strings.Contains(problem, "where") || !strings.Contains(problem, "undefined field 'amont'") {
		t.Errorf("the page says %q, want the where filter's type error", problem)
	}
}

// A live update that arrives while the reader holds the mouse button
// down on the page waits for the release: swapping the node under the
// pointer between press and release would lose the click.
func TestBrowserClickSurvivesLiveUpdate(t *testing.T) {
	ctx := browser(t, 1280, 1000)
	p, w, base, engine := liveEngine(t)
	p.failing.Store(true)
	ref, err := w.Trigger(t.Context(), []byte(`{"note":"held","amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Wait(t.Context(), ref.ID); res == nil || res.Status != runtime.RunFailed {
		t.Fatalf("the run ended %v, %v; want FAILED", res, err)
	}
	link := `g.node[data-step="charge"] a`
	var box struct{ X, Y float64 }
	err = chromedp.Run(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/runs/%s", base, ref.ID)),
		chromedp.WaitVisible(link),
		chromedp.Evaluate(`(() => { const a = document.querySelector('`+link+`'); a.scrollIntoView({block: "center"});
			const r = a.getBoundingClientRect(); return {X: r.x + r.width / 2, Y: r.y + r.height / 2}; })()`, &box),
	)
	if err == nil { // box is known only now
		err = chromedp.Run(ctx, input.DispatchMouseEvent(input.MousePressed, box.X, box.Y).WithButton(input.Left).WithClickCount(1))
	}
	if err != nil {
		t.Fatalf("pressing on the failed step: %v", err)
	}
	// The run changes while the button is down: retried, charge fails
	// again, and the page's live part has news.
	if err := engine.RetryRun(t.Context(), ref.ID); err != nil {
		t.Fatalf("retrying the run: %v", err)
	}
	var held bool
	if err := chromedp.Run(ctx, chromedp.Poll(`document.getElementById("live").hasAttribute("data-held")`, &held,
		chromedp.WithPollingTimeout(15*time.Second))); err != nil || !held {
		t.Fatalf("no live update arrived while the button was down: %v", err)
	}
	var opened bool
	err = chromedp.Run(ctx,
		input.DispatchMouseEvent(input.MouseReleased, box.X, box.Y).WithButton(input.Left).WithClickCount(1),
		chromedp.Poll(`location.hash === "#step-1" && !document.getElementById("live").hasAttribute("data-held")
			&& document.getElementById("live").getAttribute("data-updates") !== null
			&& document.querySelector('g.node[data-step="charge"]').classList.contains("selected")`, &opened,
			chromedp.WithPollingTimeout(10*time.Second)),
	)
	if err != nil || !opened {
		var state string
		_ = chromedp.Run(ctx, chromedp.Evaluate(`JSON.stringify({hash: location.hash, held: document.getElementById("live").hasAttribute("data-held"),
			updates: document.getElementById("live").getAttribute("data-updates"),
			selected: document.querySelector('g.node[data-step="charge"]').classList.contains("selected")})`, &state))
		t.Errorf("the click whose press and release an update came between was lost, or the update never applied (%s): %v", state, err)
	}
}

// signIn makes every request of the browser carry HTTP Basic credentials,
// as a browser does once its user has typed them.
func signIn(name, password string) chromedp.Action {
	auth := base64.StdEncoding.EncodeToString([]byte(name + ":" + password))
	return network.SetExtraHTTPHeaders(network.Headers{"Authorization": "Basic " + auth})
}

// A read-only user's browser shows a failed run with no button that acts
// (TestReadOnlyUser checks the live updates' HTML); an operator's shows
// Retry, and a rerun from each step.
func TestBrowserReadOnlyUserSeesNoActions(t *testing.T) {
	users := testUsers(t)
	p, w, base, _ := liveEngine(t, func(o *dashboard.Options) { o.Authenticate = users.Authenticate })
	p.failing.Store(true)
	ref, err := w.Trigger(t.Context(), []byte(`{"note":"look only","amount":7}`))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Wait(t.Context(), ref.ID); res == nil || res.Status != runtime.RunFailed {
		t.Fatalf("the run ended %v, %v; want FAILED", res, err)
	}
	for _, tt := range []struct {
		name, password string
		buttons, forms int // retry, and retry with a rerun from each of the four steps
	}{{"bob", "bob", 0, 0}, {"alice", "ecila", 1, 5}} {
		ctx := browser(t, 1280, 900)
		var buttons, forms int
		err := chromedp.Run(ctx,
			network.Enable(),
			signIn(tt.name, tt.password),
			chromedp.Navigate(fmt.Sprintf("%s/runs/%s", base, ref.ID)),
			chromedp.WaitVisible(`#run-status .badge.s-failed`),
			// The stream's first update repeats the page; wait for the
			// stream to open, so that what is counted is what it shows.
			chromedp.Poll(`document.getElementById("live-state").classList.contains("on")`, nil, chromedp.WithPollingTimeout(10*time.Second)),
			chromedp.Evaluate(`document.querySelectorAll("#retry, #cancel").length`, &buttons),
			chromedp.Evaluate(`document.querySelectorAll("form[method=post]").length`, &forms),
		)
		if err != nil {
			t.Fatalf("%s opening the failed run: %v", tt.name, err)
		}
		if buttons != tt.buttons || forms != tt.forms {
			t.Errorf("%s sees %d action buttons and %d forms, want %d and %d", tt.name, buttons, forms, tt.buttons, tt.forms)
		}
	}
}

// A user types a run's idempotency key, or the start of its id, into the
// header's search box and lands on the run; a key several runs share
// lists them; one nobody used says so. A user who sees one tenant finds
// only that tenant's run of a shared key.
func TestBrowserSearch(t *testing.T) {
	users := testUsers(t)
	_, w, base, _ := liveEngine(t, func(o *dashboard.Options) { o.Authenticate = users.Authenticate })
	trigger := func(tenant, key string) runtime.RunID {
		ref, err := w.Trigger(t.Context(), []byte(`{"note":"search","amount":1}`), runtime.WithTenant(tenant), runtime.WithIdempotencyKey(key))
		if err != nil {
			t.Fatal(err)
		}
		return ref.ID
	}
	keyed := trigger("acme", "order-1234")
	acme := trigger("acme", "shared")
	globex := trigger("globex", "shared")

	// search types q into the header's box on the runs page and presses
	// Enter, then waits for ready.
	search := func(ctx context.Context, q, ready string) (string, error) {
		var location string
		err := chromedp.Run(ctx,
			chromedp.Navigate(base+"/runs"),
			chromedp.WaitVisible("#search-q"),
			chromedp.SendKeys("#search-q", q+"\r"),
			chromedp.WaitVisible(ready),
			chromedp.Location(&location),
		)
		return location, err
	}
	ctx := browser(t, 1280, 900)
	if err := chromedp.Run(ctx, network.Enable(), signIn("alice", "ecila")); err != nil {
		t.Fatal(err)
	}
	prefix := strings.ToUpper(strings.ReplaceAll(keyed.String(), "-", "")[:16])
	for _, q := range []string{"order-1234", prefix} {
		location, err := search(ctx, q, "#run-status")
		if err != nil {
			t.Fatalf("searching for %s: %v", q, err)
		}
		if want := base + "/runs/" + keyed.String(); location != want {
			t.Errorf("searching for %s landed on %s, want %s", q, location, want)
		}
	}
	var listed int
	var none string
	_, err := search(ctx, "shared", "#search-by-key")
	if err == nil {
		err = chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll("#search-by-key table.runs tbody tr").length`, &listed))
	}
	if err == nil {
		_, err = search(ctx, "nobody's key", "#search-none")
	}
	if err == nil {
		err = chromedp.Run(ctx, chromedp.Text("#search-none", &none))
	}
	if err != nil {
		t.Fatalf("searching: %v", err)
	}
	if listed != 2 {
		t.Errorf("searching for a key two runs share lists %d runs, want 2", listed)
	}
	if !strings.Contains(none, "No run") || !strings.Contains(none, "nobody's key") {
		t.Errorf("searching for an unused key says %q", none)
	}

	carol := browser(t, 1280, 900)
	if err := chromedp.Run(carol, network.Enable(), signIn("carol", "lorac")); err != nil {
		t.Fatal(err)
	}
	location, err := search(carol, "shared", "#run-status")
	if err != nil {
		t.Fatalf("carol searching: %v", err)
	}
	if want := base + "/runs/" + acme.String(); location != want {
		t.Errorf("carol's search for a key acme and globex share landed on %s, want acme's run %s (not globex's %s)", location, want, globex)
	}
}

// A user filters the runs list by a tag, sees only the runs carrying it,
// and opens one to see its tags.
func TestBrowserFilterByTag(t *testing.T) {
	ctx := browser(t, 1280, 900)
	_, w, base, _ := liveEngine(t)
	acme, err := w.Trigger(t.Context(), []byte(`{"note":"a"}`), runtime.WithTags(map[string]string{"customer": "acme", "channel": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	globex, err := w.Trigger(t.Context(), []byte(`{"note":"g"}`), runtime.WithTag("customer", "globex"))
	if err != nil {
		t.Fatal(err)
	}
	var described, table, tags string
	err = chromedp.Run(ctx,
		chromedp.Navigate(base+"/runs"),
		chromedp.WaitVisible(`#tag-new`),
		chromedp.SendKeys(`#tag-new`, "customer=acme"),
		chromedp.Submit(`#filters`),
		// The filtered page shows the tag in its form again.
		chromedp.WaitVisible(`input[name="tag"][value="customer=acme"]`),
		// Read at once, by script: a live update may replace the nodes.
		chromedp.Evaluate(`document.querySelector("p.described").innerText`, &described),
		chromedp.Evaluate(`document.querySelector("table.runs").innerText`, &table),
	)
	if err != nil {
		t.Fatalf("filtering by a tag: %v", err)
	}
	if !strings.Contains(described, "tagged customer=acme") {
		t.Errorf("the page describes the filter as %q", described)
	}
	if !strings.Contains(table, acme.ID.String()) || strings.Contains(table, globex.ID.String()) {
		t.Errorf("filtered by customer=acme, the table shows:\n%s", table)
	}
	err = runStable(ctx, chromedp.Click(`a.id[href$="/runs/`+acme.ID.String()+`"]`))
	if err == nil {
		err = chromedp.Run(ctx, chromedp.WaitVisible(`#tags`), chromedp.Evaluate(`document.querySelector("#tags").innerText`, &tags))
	}
	if err != nil {
		t.Fatalf("opening the tagged run: %v", err)
	}
	if !strings.Contains(tags, "channel=web") || !strings.Contains(tags, "customer=acme") {
		t.Errorf("the run page shows tags %q", tags)
	}
}
