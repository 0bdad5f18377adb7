package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/store"
)

// storeRun creates a probe run with the id given, straight in the store:
// the engine's ids are random, and runs found by a shared prefix need ids
// chosen to share one.
func (b *bundle) storeRun(id, tenant, key string) runtime.RunID {
	b.t.Helper()
	res, err := b.h.Store.CreateRuns(b.t.Context(), store.CreateRuns{Now: b.h.Clock.Now(), Runs: []store.NewRun{{
		ID: uuid.MustParse(id), Workflow: "probe", Version: "probe@crafted", Tenant: tenant, IdempotencyKey: key, Input: []byte(`{}`),
		Tasks: []store.NewTask{{Step: 0, Kind: store.KindCode, MaxAttempts: 1}},
	}}})
	if err != nil {
		b.t.Fatal(err)
	}
	return res[0].ID
}

// search fetches the search page for q and returns its status, where it
// redirects to (under the base) and its body.
func (b *bundle) search(q string) (int, string, string) {
	b.t.Helper()
	resp, body := b.request(http.MethodGet, "/search?"+url.Values{"q": {q}}.Encode(), "", nil, nil)
	return resp.StatusCode, resp.Header.Get("Location"), body
}

func TestSearch(t *testing.T) {
	b := setup(t, dashboard.Options{Prefix: "/ops"})
	keyed := b.trigger(`{"note":"keyed"}`, runtime.WithIdempotencyKey("order-1234"))
	acme := b.trigger(`{"note":"acme"}`, runtime.WithTenant("acme"), runtime.WithIdempotencyKey("shared-key"))
	globex := b.trigger(`{"note":"globex"}`, runtime.WithTenant("globex"), runtime.WithIdempotencyKey("shared-key"))
	first := b.storeRun("abcd0000-0000-7000-8000-000000000001", "acme", "")
	second := b.storeRun("abcd0000-0000-7000-8000-000000000002", "globex", "")

	// One run found opens it: by its id (as typed, any case, braces), a
	// unique start of it, or its key.
	for _, q := range []string{keyed.String(), strings.ToUpper(keyed.String()), "{" + keyed.String() + "}", "  " + keyed.String() + " ", "order-1234"} {
		if code, to, body := b.search(q); code != http.StatusSeeOther || to != "/ops/runs/"+keyed.String() {
			t.Errorf("search %q = %d to %q, want 303 to the run; body:\n%s", q, code, to, body)
		}
	}
	for _, q := range []string{"abcd0000-0000-7000-8000-000000000001", "ABCD0000000070008000000000000001", "abcd0000-0000-7000-8000-000000000002"} {
		want := first
		if strings.HasSuffix(q, "2") {
			want = second
		}
		if code, to, _ := b.search(q); code != http.StatusSeeOther || to != "/ops/runs/"+want.String() {
			t.Errorf("search %q = %d to %q, want 303 to %s", q, code, to, want)
		}
	}

	// Several are listed.
	code, _, body := b.search("abcd0000")
	if code != http.StatusOK || !strings.Contains(body, `id="search-by-id"`) || !strings.Contains(body, first.String()) || !strings.Contains(body, second.String()) ||
		!strings.Contains(body, "2 runs have ids that begin with") {
		t.Errorf("search abcd0000 = %d; want both abcd runs listed:\n%s", code, body)
	}
	code, _, body = b.search("shared-key")
	if code != http.StatusOK || !strings.Contains(body, `id="search-by-key"`) || !strings.Contains(body, acme.String()) || !strings.Contains(body, globex.String()) ||
		!strings.Contains(body, `href="/ops/runs?key=shared-key"`) {
		t.Errorf("search shared-key = %d; want both tenants' runs and a link to the listing:\n%s", code, body)
	}

	// None says so; what no run id begins with is looked up as a key only.
	for q, want := range map[string]string{
		"abcf0000":    "No run has an id that begins with",
		"order-9":     "was triggered with the idempotency key",
		"%":           "was triggered with the idempotency key",
		"_":           "was triggered with the idempotency key",
		"abcd%":       "was triggered with the idempotency key",
		"order\x00-1": "was triggered with the idempotency key",
		"\xff\xfe":    "was triggered with the idempotency key",
	} {
		code, _, body := b.search(q)
		if code != http.StatusOK || !strings.Contains(body, `id="search-none"`) || !strings.Contains(body, want) {
			t.Errorf("search %q = %d; want a page saying no run matches (%q):\n%s", q, code, want, body)
		}
	}
	// What was typed is shown escaped, and cut.
	code, _, body = b.search(`<script>alert(1)</script>` + strings.Repeat("k", 10_000))
	if code != http.StatusOK || strings.Contains(body, "<script>alert") {
		t.Errorf("search of markup = %d:\n%.2000s", code, body)
	}
	if strings.Count(body, strings.Repeat("k", 10_000)) != 1 || !strings.Contains(body, "kkk…</span>") { // only the form's field holds it whole
		t.Errorf("the search page repeats a long query whole, or does not cut it")
	}
	// An empty search shows the form and what it takes.
	if code, _, body := b.search(""); code != http.StatusOK || !strings.Contains(body, "at least its first 8 hex digits") {
		t.Errorf("empty search = %d:\n%s", code, body)
	}
	// Every page's header has the search box.
	if body := b.page("/runs", http.StatusOK); !strings.Contains(body, `action="/ops/search"`) || !strings.Contains(body, `id="search-q"`) {
		t.Error("the runs page has no search box")
	}
}

// A user who sees only some tenants finds only their runs: a search for
// another tenant's run, by its id, a prefix or its key, finds nothing, as
// for a run that does not exist.
func TestSearchTenantScoped(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate})
	acme := b.failed(`{"note":"acme's"}`, runtime.WithTenant("acme"), runtime.WithIdempotencyKey("order-7"))
	initech := b.failed(`{"note":"initech's"}`, runtime.WithTenant("initech"), runtime.WithIdempotencyKey("order-7"))
	secret := b.failed(`{"note":"initech's"}`, runtime.WithTenant("initech"), runtime.WithIdempotencyKey("initech-only"))
	b.storeRun("abcd0000-0000-7000-8000-000000000001", "acme", "")
	hidden := b.storeRun("abcd0000-0000-7000-8000-000000000002", "initech", "")
	carol := b.as("carol", "lorac") // sees acme only

	for _, q := range []string{secret.String(), secret.String()[:18], "initech-only", hidden.String()} {
		code, to, body := carol.search(q)
		if code != http.StatusOK || to != "" || !strings.Contains(body, `id="search-none"`) || strings.Contains(body, "/runs/"+secret.String()) || strings.Contains(body, "/runs/"+hidden.String()) {
			t.Errorf("carol's search %q = %d to %q; want nothing found:\n%s", q, code, to, body)
		}
	}
	// A key both tenants used finds her tenant's run only, and opens it;
	// so does a prefix the other tenant's run shares.
	if code, to, _ := carol.search("order-7"); code != http.StatusSeeOther || to != "/runs/"+acme.String() {
		t.Errorf("carol's search order-7 = %d to %q, want acme's run %s (not initech's %s)", code, to, acme, initech)
	}
	if code, to, _ := carol.search("abcd0000"); code != http.StatusSeeOther || to != "/runs/abcd0000-0000-7000-8000-000000000001" {
		t.Errorf("carol's search abcd0000 = %d to %q, want acme's abcd run", code, to)
	}
	// Alice, who sees every tenant, finds both.
	alice := b.as("alice", "ecila")
	if code, _, body := alice.search("order-7"); code != http.StatusOK || !strings.Contains(body, acme.String()) || !strings.Contains(body, initech.String()) {
		t.Errorf("alice's search order-7 = %d, want both runs", code)
	}
	// A read-only user searches as anyone does, and is offered no action.
	bob := b.as("bob", "bob")
	if code, _, body := bob.search("order-7"); code != http.StatusOK || strings.Contains(body, "trellis-csrf") || strings.Contains(body, `method="post"`) {
		t.Errorf("bob's (read-only) search = %d, or it offers actions", code)
	}
}

// A search for key=value finds the runs with that tag: one opens, several
// are listed with a link to the runs list filtered by it, and a tag only
// another tenant's runs have finds nothing for a user who does not see
// that tenant.
func TestSearchByTag(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate})
	vip := b.failed(`{"note":"vip"}`, runtime.WithTenant("acme"), runtime.WithTag("customer", "vip-1"))
	b.failed(`{"note":"a"}`, runtime.WithTenant("acme"), runtime.WithTag("channel", "web"))
	b.failed(`{"note":"b"}`, runtime.WithTenant("acme"), runtime.WithTag("channel", "web"))
	hidden := b.failed(`{"note":"c"}`, runtime.WithTenant("initech"), runtime.WithTag("customer", "initech-secret"))
	alice, carol := b.as("alice", "ecila"), b.as("carol", "lorac") // carol sees acme only

	if code, to, body := alice.search("customer=vip-1"); code != http.StatusSeeOther || to != "/runs/"+vip.String() {
		t.Errorf("search customer=vip-1 = %d to %q, want the tagged run; body:\n%s", code, to, body)
	}
	code, _, body := alice.search("channel=web")
	if code != http.StatusOK || !strings.Contains(body, `id="search-by-tag"`) || !strings.Contains(body, "2 runs are tagged") ||
		!strings.Contains(body, `href="/runs?tag=channel%3Dweb"`) {
		t.Errorf("search channel=web = %d; want both runs and a link to the filtered list:\n%s", code, body)
	}
	if code, to, body := carol.search("customer=initech-secret"); code != http.StatusOK || to != "" ||
		!strings.Contains(body, `id="search-none"`) || strings.Contains(body, hidden.String()) {
		t.Errorf("carol's search for initech's tag = %d to %q; want nothing found:\n%s", code, to, body)
	}
	// What is not a tag (a key with capitals or spaces) is a key only.
	if code, _, body := alice.search("Customer=vip-1"); code != http.StatusOK || !strings.Contains(body, `id="search-none"`) || strings.Contains(body, "or is tagged so") {
		t.Errorf("search Customer=vip-1 = %d; want no tag search:\n%s", code, body)
	}
}
