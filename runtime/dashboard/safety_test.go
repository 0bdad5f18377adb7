package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// Markup that must never reach a page as markup: each comes from users'
// data (a tenant, an input, a step's error and output).
var hostile = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(2)>`,
	`</pre><script>alert(3)</script>`,
	`<svg onload=alert(5)>`,
}

func TestUserDataIsEscaped(t *testing.T) {
	b := setup(t, dashboard.Options{})
	tenant := `<script>alert(1)</script>`
	note := strings.Join(hostile, " ") + " javascript:alert(4)"
	var doc strings.Builder
	enc := json.NewEncoder(&doc)
	enc.SetEscapeHTML(false) // the input holds the markup itself, not \u003c
	if err := enc.Encode(map[string]any{"note": note, "amount": 1, `"><img src=x onerror=alert(2)>`: `</pre><script>alert(3)</script>`}); err != nil {
		t.Fatal(err)
	}
	input := doc.String()
	if !strings.Contains(input, "<script>") {
		t.Fatalf("the input %s does not hold the markup", input)
	}
	id := b.failed(input, runtime.WithTenant(tenant), runtime.WithIdempotencyKey(`"><img src=x onerror=alert(2)>`))
	stream := b.live("/live/runs/" + id.String())
	overview := b.live("/live/overview")

	pages := map[string]string{
		"overview":      b.page("/", http.StatusOK),
		"runs":          b.page("/runs", http.StatusOK),
		"runs filtered": b.page("/runs?tenant="+url.QueryEscape(tenant)+"&key="+url.QueryEscape(`"><img src=x onerror=alert(2)>`), http.StatusOK),
		"run":           b.page("/runs/"+id.String(), http.StatusOK),
		"workflow":      b.page("/workflows/probe", http.StatusOK),
		"run live":      stream.next(t, "card declined"),
		"overview live": overview.next(t, "card declined"),
	}
	for name, body := range pages {
		for _, h := range hostile {
			if strings.Contains(body, h) {
				t.Errorf("%s page holds %q unescaped", name, h)
			}
		}
		if strings.Contains(body, `href="javascript`) {
			t.Errorf("%s page links to javascript:", name)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s page does not show the hostile text escaped", name)
		}
	}
	if body := pages["runs filtered"]; !strings.Contains(body, id.String()) {
		t.Error("filtering by the hostile tenant and key does not find the run")
	}
	// A where condition with markup in it is shown back as text.
	body := b.page("/runs?workflow=probe&where="+url.QueryEscape(`input.note == "<script>alert(1)</script>"`), http.StatusOK)
	if strings.Contains(body, "<script>alert(1)") {
		t.Error("the runs form shows a hostile where condition unescaped")
	}
}

func TestHugeAndDeepDocuments(t *testing.T) {
	// Documents over the default size limits, as an engine whose
	// Config.SizeLimits are raised keeps them.
	b := setup(t, dashboard.Options{}, trellistest.WithConfig(func(c *runtime.Config) {
		c.SizeLimits = runtime.SizeLimits{MaxInputBytes: 4 << 20, MaxDepth: 10_000}
	}))
	huge := `{"note":"` + strings.Repeat("x", 3<<20) + `"}`
	deep := `{"note":"deep","nest":` + strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000) + `}`
	for name, input := range map[string]string{"huge": huge, "deep": deep} {
		id := b.trigger(input)
		body := b.page("/runs/"+id.String(), http.StatusOK)
		if len(body) > 1<<20 {
			t.Errorf("%s: the run page is %d bytes; want the documents cut to their beginning", name, len(body))
		}
		if !strings.Contains(body, "Download the whole document") || !strings.Contains(body, "/runs/"+id.String()+"/input.json") {
			t.Errorf("%s: the run page does not link to the whole input", name)
		}
		if code, whole := b.get("/runs/" + id.String() + "/input.json"); code != 200 || len(whole) != len(input) {
			t.Errorf("%s: input.json = %d, %d bytes; want the %d bytes of the input", name, code, len(whole), len(input))
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	b := setup(t, dashboard.Options{})
	resp, err := b.client.Get(b.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers %v: want nosniff and DENY", resp.Header)
	}
}

// Actions need this dashboard's token, bound to the browser's cookie,
// and come from its own origin; then a confirmation.
func TestActionsNeedTokenOriginAndConfirmation(t *testing.T) {
	b := setup(t, dashboard.Options{})
	id := b.failed(`{"note":"retry me"}`)
	path := "/runs/" + id.String() + "/retry"
	token := b.token("/runs/" + id.String())
	confirmed := url.Values{"csrf": {token}, "confirm": {"yes"}}

	refused := []struct {
		name    string
		form    url.Values
		headers map[string]string
		cookie  bool
	}{
		{"no token", url.Values{"confirm": {"yes"}}, nil, true},
		{"a wrong token", url.Values{"csrf": {"AAAA" + token[4:]}, "confirm": {"yes"}}, nil, true},
		{"another site", confirmed, map[string]string{"Sec-Fetch-Site": "cross-site"}, true},
		{"a sibling subdomain", confirmed, map[string]string{"Sec-Fetch-Site": "same-site"}, true},
		{"another origin", confirmed, map[string]string{"Origin": "https://evil.example"}, true},
		{"a null origin", confirmed, map[string]string{"Origin": "null"}, true},
		{"no cookie", confirmed, nil, false},
	}
	for _, tt := range refused {
		if !tt.cookie {
			b.client.Jar.SetCookies(mustURL(t, b.base+"/"), []*http.Cookie{{Name: "trellis_csrf", Value: "x", MaxAge: -1}})
		}
		code, _, body := b.post(path, tt.form, tt.headers)
		if code != http.StatusForbidden || !strings.Contains(body, "Refused") {
			t.Errorf("%s: POST %s = %d, want 403 Refused", tt.name, path, code)
		}
		if st := b.h.Result(id).Status; st != runtime.RunFailed {
			t.Fatalf("%s: the run is %s after a refused retry", tt.name, st)
		}
		if !tt.cookie {
			token = b.token("/runs/" + id.String()) // a new cookie, a new token
			confirmed = url.Values{"csrf": {token}, "confirm": {"yes"}}
		}
	}

	// Unconfirmed, the action asks first and changes nothing.
	code, _, body := b.post(path, url.Values{"csrf": {token}}, map[string]string{"Origin": b.srv.URL, "Sec-Fetch-Site": "same-origin"})
	if code != http.StatusOK || !strings.Contains(body, "Retry run?") || !strings.Contains(body, `name="confirm" value="yes"`) {
		t.Errorf("an unconfirmed retry = %d, want the confirmation page", code)
	}
	if code, body := b.get(path); code != http.StatusOK || !strings.Contains(body, "Retry run?") {
		t.Errorf("GET %s = %d, want the confirmation page", path, code)
	}
	if st := b.h.Result(id).Status; st != runtime.RunFailed {
		t.Fatalf("the run is %s after an unconfirmed retry", st)
	}

	// Confirmed, from the page's own origin, it acts, and shows the run.
	code, location, _ := b.post(path, confirmed, map[string]string{"Origin": b.srv.URL, "Sec-Fetch-Site": "same-origin"})
	if code != http.StatusSeeOther || location != "/runs/"+id.String()+"?done=retried" {
		t.Fatalf("a confirmed retry = %d to %q, want 303 to the run", code, location)
	}
	if st := b.h.Result(id).Status; st != runtime.RunRunning {
		t.Fatalf("the run is %s after a confirmed retry, want RUNNING", st)
	}
	if body := b.page(location, http.StatusOK); !strings.Contains(body, "Retried: the run is running again") {
		t.Error("the run page does not say the run was retried")
	}
	// Retrying it again does nothing, and says so.
	_, location, _ = b.post(path, confirmed, nil)
	if location != "/runs/"+id.String()+"?done=not+retryable" {
		t.Errorf("retrying a running run redirects to %q", location)
	}
	_, location, _ = b.post("/runs/"+id.String()+"/cancel", confirmed, nil)
	if st := b.h.Result(id).Status; st != runtime.RunCancelled || location != "/runs/"+id.String()+"?done=cancelled" {
		t.Errorf("cancel: the run is %s, redirected to %q", st, location)
	}
	if code, _, _ := b.post("/runs/"+id.String()+"/delete", confirmed, nil); code != http.StatusNotFound {
		t.Errorf("an unknown action = %d, want 404", code)
	}
	if code, _, _ := b.post("/runs/01950000-0000-7000-8000-000000000000/retry", confirmed, nil); code != http.StatusNotFound {
		t.Errorf("retrying an unknown run = %d, want 404", code)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestReadOnly(t *testing.T) {
	b := setup(t, dashboard.Options{ReadOnly: true})
	failed := b.failed(`{"note":"look only"}`)
	running := b.trigger(`{"note":"sleeping"}`)
	for _, id := range []runtime.RunID{failed, running} {
		body := b.page("/runs/"+id.String(), http.StatusOK)
		if strings.Contains(body, `method="post"`) || strings.Contains(body, `id="retry"`) || strings.Contains(body, `id="cancel"`) || strings.Contains(body, "trellis-csrf") {
			t.Errorf("read-only: run %s's page offers actions", id)
		}
		if !strings.Contains(body, "read-only") {
			t.Error("read-only: the page does not say so")
		}
	}
	for _, path := range []string{"/runs/" + failed.String() + "/retry", "/runs/" + running.String() + "/cancel", "/runs/" + failed.String() + "/rerun"} {
		code, _, body := b.post(path, url.Values{"confirm": {"yes"}, "step": {"charge"}}, nil)
		if code != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("read-only: POST %s = %d, want 403", path, code)
		}
		if code, _ := b.get(path); code != http.StatusForbidden {
			t.Errorf("read-only: GET %s = %d, want 403", path, code)
		}
	}
	if b.h.Result(failed).Status != runtime.RunFailed || b.h.Result(running).Status != runtime.RunRunning {
		t.Error("read-only: a run changed")
	}
}

func TestPrefix(t *testing.T) {
	b := setup(t, dashboard.Options{Prefix: "/ops/trellis/"})
	id := b.failed(`{"note":"prefixed"}`)
	body := b.page("/runs/"+id.String(), http.StatusOK)
	for _, want := range []string{`href="/ops/trellis/assets/style.css"`, `src="/ops/trellis/assets/app.js"`, `href="/ops/trellis/runs"`,
		`action="/ops/trellis/runs/` + id.String() + `/retry"`, `data-live="/ops/trellis/live/runs/` + id.String() + `"`} {
		if !strings.Contains(body, want) {
			t.Errorf("under a prefix, the run page lacks %s", want)
		}
	}
	if strings.Contains(body, `href="/runs`) || strings.Contains(body, `href="/assets`) {
		t.Error("under a prefix, the run page links outside it")
	}
	if code, js := b.get("/assets/app.js"); code != http.StatusOK || !strings.Contains(js, "EventSource") {
		t.Errorf("the script under the prefix = %d", code)
	}
	token := b.token("/runs/" + id.String())
	_, location, _ := b.post("/runs/"+id.String()+"/retry", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil)
	if location != "/ops/trellis/runs/"+id.String()+"?done=retried" {
		t.Errorf("a retry under a prefix redirects to %q", location)
	}
	resp, err := b.client.Get(b.srv.URL + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /runs outside the prefix = %d, want 404", resp.StatusCode)
	}
}
