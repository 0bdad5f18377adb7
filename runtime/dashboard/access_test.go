package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
)

// reply is what request returns of a response, whose body it read and
// closed.
type reply struct {
	StatusCode int
	Header     http.Header
}

// request sends method to path with Host host (and headers), and returns
// the response with its body read.
func (b *bundle) request(method, path, host string, form url.Values, headers map[string]string) (reply, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	// A stream that should have been refused ends when this does.
	ctx, cancel := context.WithTimeout(b.t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{StatusCode: resp.StatusCode, Header: resp.Header}, string(data)
}

// port is the port the test server listens on.
func (b *bundle) port() string { return mustURL(b.t, b.srv.URL).Port() }

// A page that rebinds its own name to the dashboard's address sends that
// name as Host (and Origin): the dashboard answers it nothing, and acts
// on nothing it posts.
func TestOnlyAllowedHosts(t *testing.T) {
	b := setup(t, dashboard.Options{})
	id := b.failed(`{"note":"rebind"}`)
	token := b.token("/runs/" + id.String())
	evil := "evil.test:" + b.port()
	for _, path := range []string{"/", "/runs/" + id.String(), "/runs/" + id.String() + "/input.json", "/live/overview", "/assets/app.js"} {
		resp, body := b.request(http.MethodGet, path, evil, nil, nil)
		if resp.StatusCode != http.StatusMisdirectedRequest || strings.Contains(body, "trellis-csrf") || strings.Contains(body, id.String()) ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Errorf("GET %s with Host %s = %d %q, want 421 in plain text and nothing of the dashboard", path, evil, resp.StatusCode, body)
		}
	}
	confirmed := url.Values{"csrf": {token}, "confirm": {"yes"}}
	resp, _ := b.request(http.MethodPost, "/runs/"+id.String()+"/retry", evil, confirmed,
		map[string]string{"Origin": "http://" + evil, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a retry with Host and Origin %s = %d, want 421", evil, resp.StatusCode)
	}
	if st := b.h.Result(id).Status; st != runtime.RunFailed {
		t.Fatalf("the run is %s after a retry from a rebound name", st)
	}
	for _, host := range []string{"localhost:" + b.port(), "127.0.0.1:" + b.port(), "[::1]:" + b.port(), "LOCALHOST.", "127.0.0.2"} {
		if resp, _ := b.request(http.MethodGet, "/", host, nil, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("GET / with Host %s = %d, want 200 (a loopback name)", host, resp.StatusCode)
		}
	}
	for _, host := range []string{"", "localhost.evil.test", "127.0.0.1.nip.io", "evil.test"} {
		if resp, _ := b.request(http.MethodGet, "/", host, nil, map[string]string{}); host != "" && resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("GET / with Host %q = %d, want 421", host, resp.StatusCode)
		}
	}
}

func TestAllowedHostsList(t *testing.T) {
	b := setup(t, dashboard.Options{AllowedHosts: []string{"ops.example.com", "ops.example.net:8443", "*.trellis.example"}})
	tests := []struct {
		host string
		want int
	}{
		{"ops.example.com", 200},
		{"OPS.example.com:9999", 200},
		{"ops.example.net:8443", 200},
		{"ops.example.net:8444", 421},
		{"ops.example.net", 421},
		{"a.trellis.example", 200},
		{"a.b.trellis.example:80", 200},
		{"trellis.example", 421},
		{"eviltrellis.example", 421},
		{"127.0.0.1:" + b.port(), 421}, // a list replaces the loopback default
		{"evil.test", 421},
	}
	for _, tt := range tests {
		if resp, _ := b.request(http.MethodGet, "/", tt.host, nil, nil); resp.StatusCode != tt.want {
			t.Errorf("GET / with Host %q = %d, want %d", tt.host, resp.StatusCode, tt.want)
		}
	}
	// An action from an allowed host, with its own origin, goes through;
	// with another origin it does not.
	id := b.failed(`{"note":"allowed"}`)
	b.client.Transport = hostTransport("ops.example.com")
	token := b.token("/runs/" + id.String())
	form := url.Values{"csrf": {token}, "confirm": {"yes"}}
	resp, _ := b.request(http.MethodPost, "/runs/"+id.String()+"/retry", "", form, map[string]string{"Origin": "https://a.trellis.example"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a retry from another allowed origin = %d, want 403", resp.StatusCode)
	}
	resp, body := b.request(http.MethodPost, "/runs/"+id.String()+"/retry", "", form, map[string]string{"Origin": "https://ops.example.com"})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a retry from its own origin = %d %s, want 303", resp.StatusCode, body)
	}

	for _, bad := range [][]string{{"https://ops.example.com"}, {"ops.example.com/x"}, {"*.*.example"}, {" "}, {":8080"}} {
		if _, err := dashboard.New(nil, dashboard.Options{AllowedHosts: bad}); err == nil || !strings.Contains(err.Error(), "allowed host") {
			t.Errorf("AllowedHosts %q: New = %v, want an error naming the entry", bad, err)
		}
	}
}

// With AllowedHosts "*" (a proxy in front checks Host), any name reads
// the dashboard, but only a name the list gives, or a trusted origin,
// may act: a rebound name with its own Origin does not.
func TestAnyHostActsOnlyFromNamedOrigins(t *testing.T) {
	b := setup(t, dashboard.Options{AllowedHosts: []string{"*", "ops.example.com"}, TrustedOrigins: []string{"https://proxy.example.org"}})
	id := b.failed(`{"note":"any host"}`)
	for _, tt := range []struct {
		host, origin string
		want         int
	}{
		{"evil.test", "http://evil.test", http.StatusForbidden},
		{"evil.test", "https://ops.example.com", http.StatusForbidden},
		{"ops.example.com", "https://ops.example.com", http.StatusSeeOther},
		{"internal:8080", "https://proxy.example.org", http.StatusSeeOther},
	} {
		b.client.Transport = hostTransport(tt.host)
		token := b.token("/runs/" + id.String())
		resp, body := b.request(http.MethodPost, "/runs/"+id.String()+"/retry", "", url.Values{"csrf": {token}, "confirm": {"yes"}},
			map[string]string{"Origin": tt.origin})
		if resp.StatusCode != tt.want {
			t.Errorf("a retry to Host %s from Origin %s = %d, want %d; %s", tt.host, tt.origin, resp.StatusCode, tt.want, oneLine(body))
		}
		if tt.want == http.StatusSeeOther {
			if _, err := b.h.Engine.CancelRun(t.Context(), id); err != nil { // the next case retries it again
				t.Fatal(err)
			}
			b.h.RunUntilIdle()
		}
	}
}

// oneLine is the dashboard's reason in a page, or the first line of body.
func oneLine(body string) string {
	if i := strings.Index(body, "Refused"); i >= 0 {
		body = body[i:]
	}
	line, _, _ := strings.Cut(body, "\n")
	return line
}

// hostTransport sends every request with Host host, keeping the test
// client's cookies those of the server's address.
type hostTransport string

func (h hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = string(h)
	return http.DefaultTransport.RoundTrip(r)
}

// Every response that carries run data says no cache may keep it.
func TestNoStore(t *testing.T) {
	b := setup(t, dashboard.Options{})
	id := b.failed(`{"note":"private"}`)
	for _, path := range []string{"/", "/runs", "/runs/" + id.String(), "/runs/" + id.String() + "/input.json",
		"/runs/" + id.String() + "/steps/reserve/output.json", "/workflows", "/workflows/probe", "/runs/nope", "/nowhere"} {
		resp, _ := b.request(http.MethodGet, path, "", nil, nil)
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("GET %s (%d): Cache-Control %q, want no-store", path, resp.StatusCode, cc)
		}
	}
}

// testUsers is a users file: an operator, a read-only user, and an
// operator of tenant acme only. Every password is the name reversed.
func testUsers(t *testing.T) *dashboard.Users {
	t.Helper()
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	file := fmt.Sprintf("# who may see the dashboard\n\nalice:%s:operator\nbob:%s\ncarol:%s:operator:acme\ndave:%s:read-only:acme, globex\n",
		hash("ecila"), hash("bob"), hash("lorac"), hash("evad"))
	users, err := dashboard.ParseUsers(strings.NewReader(file), "users")
	if err != nil {
		t.Fatal(err)
	}
	return users
}

// as returns the bundle with a client of its own (its own cookies) that
// signs in as name with password.
func (b *bundle) as(name, password string) *bundle {
	c := *b
	jar, _ := cookiejar.New(nil)
	c.client = &http.Client{Jar: jar, Transport: basicTransport{name, password}, CheckRedirect: b.client.CheckRedirect}
	return &c
}

type basicTransport struct{ name, password string }

func (a basicTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth(a.name, a.password)
	return http.DefaultTransport.RoundTrip(r)
}

func TestBasicAuthentication(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate})
	id := b.failed(`{"note":"secret"}`)
	paths := []string{"/", "/runs", "/runs/" + id.String(), "/runs/" + id.String() + "/input.json", "/live/overview", "/assets/app.js"}
	for who, c := range map[string]*bundle{"nobody": b, "a wrong password": b.as("alice", "alice"), "an unknown user": b.as("mallory", "yrollam"),
		"an empty password": b.as("alice", ""), "a huge password": b.as("alice", strings.Repeat("x", 100<<10))} {
		for _, path := range paths {
			resp, body := c.request(http.MethodGet, path, "", nil, nil)
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") ||
				strings.Contains(body, id.String()) || strings.Contains(body, "secret") {
				t.Errorf("%s: GET %s = %d %q, WWW-Authenticate %q; want 401 asking for a password, and nothing else",
					who, path, resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
	alice := b.as("alice", "ecila")
	for _, path := range paths[:4] {
		alice.page(path, http.StatusOK)
	}
	alice.live("/live/runs/"+id.String()).next(t, "card declined")
	body := alice.page("/runs/"+id.String(), http.StatusOK)
	if !strings.Contains(body, `id="retry"`) || !strings.Contains(body, ">alice<") {
		t.Error("an operator's run page has no Retry button, or does not name her")
	}
	token := alice.token("/runs/" + id.String())
	if code, _, _ := alice.post("/runs/"+id.String()+"/retry", url.Values{"csrf": {token}, "confirm": {"yes"}}, nil); code != http.StatusSeeOther {
		t.Errorf("an operator's retry = %d, want 303", code)
	}
	if st := b.h.Result(id).Status; st != runtime.RunRunning {
		t.Errorf("the run is %s after an operator's retry, want RUNNING", st)
	}
}

// A read-only user sees the runs and no action, and may not act, even
// with a token of their own page; their live updates carry no action
// either, while an operator's do.
func TestReadOnlyUser(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate})
	failed := b.failed(`{"note":"look only"}`)
	running := b.trigger(`{"note":"sleeping"}`)
	bob := b.as("bob", "bob")
	alice := b.as("alice", "ecila")
	// The operator's stream opens first: a read-only user must not get
	// her rendering of the page.
	aliceLive := alice.live("/live/runs/" + failed.String())
	bobLive := bob.live("/live/runs/" + failed.String())
	if ev := aliceLive.next(t, "card declined"); !strings.Contains(ev, `id="retry"`) {
		t.Error("an operator's live update has no Retry button")
	}
	if ev := bobLive.next(t, "card declined"); strings.Contains(ev, "<form") || strings.Contains(ev, `id="retry"`) {
		t.Error("a read-only user's live update offers actions")
	}
	for _, id := range []runtime.RunID{failed, running} {
		body := bob.page("/runs/"+id.String(), http.StatusOK)
		if strings.Contains(body, `method="post"`) || strings.Contains(body, "trellis-csrf") || !strings.Contains(body, "read-only") {
			t.Errorf("a read-only user's page of run %s offers actions, or does not say read-only", id)
		}
	}
	// A token from an operator's page does not help either.
	token := alice.token("/runs/" + failed.String())
	for _, path := range []string{"/runs/" + failed.String() + "/retry", "/runs/" + running.String() + "/cancel", "/runs/" + failed.String() + "/rerun", "/workflows/probe/schedules/nightly/pause"} {
		code, _, body := bob.post(path, url.Values{"csrf": {token}, "confirm": {"yes"}, "step": {"charge"}}, nil)
		if code != http.StatusForbidden || !strings.Contains(body, "read-only") {
			t.Errorf("a read-only user's POST %s = %d, want 403", path, code)
		}
	}
	if b.h.Result(failed).Status != runtime.RunFailed || b.h.Result(running).Status != runtime.RunRunning {
		t.Error("a read-only user changed a run")
	}
}

func TestUsersFile(t *testing.T) {
	good, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	apache := "$2y$" + string(good)[4:] // what htpasswd -B writes
	tests := []struct {
		name, file, want string
	}{
		{"htpasswd -B", "ann:" + apache + "\n", ""},
		{"comments and blanks", "# users\n\n  ann:" + string(good) + ":operator:t1,t2\n", ""},
		{"a byte-order mark and CRLF", "\ufeffann:" + string(good) + "\r\n", ""},
		{"empty", "# nobody\n", "users:"},
		{"no hash", "ann\n", "users:1: want name:bcrypt-hash"},
		{"a plain password", "ann:hunter2:operator\n", "users:1: user \"ann\": the second field is not a bcrypt hash"},
		{"a bad role", "ann:" + string(good) + ":admin\n", "users:1: user \"ann\": role \"admin\""},
		{"an empty tenant", "ann:" + string(good) + ":operator:a,,b\n", "users:1: user \"ann\": an empty tenant"},
		{"twice", "ann:" + string(good) + "\n#\nann:" + string(good) + "\n", "users:3: user \"ann\" appears twice"},
		{"a space in a name", "a n:" + string(good) + "\n", "users:1: user name"},
		{"too many fields", "ann:" + string(good) + ":operator:t:x\n", "users:1: want"},
		{"a long line", strings.Repeat("x", 70<<10), "longer than 64 KiB"},
	}
	for _, tt := range tests {
		users, err := dashboard.ParseUsers(strings.NewReader(tt.file), "users")
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
				continue
			}
			req, _ := http.NewRequest(http.MethodGet, "/", nil)
			req.SetBasicAuth("ann", "pw")
			if u, err := users.Authenticate(req); err != nil || u.Name != "ann" || !u.ReadOnly && !strings.Contains(tt.file, "operator") {
				t.Errorf("%s: Authenticate = %+v, %v", tt.name, u, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: ParseUsers = %v, want an error containing %q", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows the line's password", tt.name)
		}
	}
	if _, err := dashboard.LoadUsers("/nonexistent/users"); err == nil {
		t.Error("LoadUsers of a missing file succeeded")
	}
}

// The live streams open at once are capped, in all and per user; beyond
// the cap a page's stream is refused with 503 and Retry-After, and a
// stream that closes makes room.
func TestStreamsCapped(t *testing.T) {
	b := setup(t, dashboard.Options{MaxStreams: 3, MaxStreamsPerUser: 2, Authenticate: testUsers(t).Authenticate})
	alice, bob := b.as("alice", "ecila"), b.as("bob", "bob")
	first := alice.live("/live/overview")
	alice.live("/live/runs")
	refused := func(c *bundle, who string) {
		t.Helper()
		code, retry, body := c.openStream("/live/overview")
		if code != http.StatusServiceUnavailable || retry == "" || !strings.Contains(body, "too many") {
			t.Fatalf("%s: a stream beyond the cap = %d %q (Retry-After %q), want 503 with Retry-After", who, code, body, retry)
		}
	}
	refused(alice, "alice's third")
	bob.live("/live/overview")
	refused(b.as("carol", "lorac"), "the fourth in all")
	first.close()
	deadline := time.Now().Add(10 * time.Second)
	for !alice.streamOpens("/live/overview") {
		if time.Now().After(deadline) {
			t.Fatal("a stream closed, and still no other opens")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// streamOpens reports whether the live stream at path opens (and closes
// it at once).
func (b *bundle) streamOpens(path string) bool {
	code, _, _ := b.openStream(path)
	return code == http.StatusOK
}

// openStream requests the live stream at path and returns its status,
// Retry-After and (unless it opened) body, closing it at once.
func (b *bundle) openStream(path string) (int, string, string) {
	b.t.Helper()
	ctx, cancel := context.WithCancel(b.t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.base+path, nil)
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "", ""
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
}

// A user who sees only some tenants sees their runs alone: another
// tenant's run answers 404 wherever its id goes, lists and the overview
// leave it out, and the figures that add up every tenant are not shown.
func TestTenantScopedUser(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate})
	acme := b.failed(`{"note":"acme's"}`, runtime.WithTenant("acme"))
	globex := b.failed(`{"note":"globex's"}`, runtime.WithTenant("globex"))
	initech := b.failed(`{"note":"initech's"}`, runtime.WithTenant("initech"))
	carol, dave := b.as("carol", "lorac"), b.as("dave", "evad")

	lists := map[string]string{
		"runs":          carol.page("/runs", http.StatusOK),
		"failed runs":   carol.page("/runs?status=FAILED&workflow=probe", http.StatusOK),
		"overview":      carol.page("/", http.StatusOK),
		"workflow":      carol.page("/workflows/probe", http.StatusOK),
		"overview live": carol.live("/live/overview").next(t, "card declined"),
		"runs live":     carol.live("/live/runs").next(t, "card declined"),
	}
	for name, body := range lists {
		if !strings.Contains(body, acme.String()) || strings.Contains(body, globex.String()) || strings.Contains(body, initech.String()) {
			t.Errorf("carol's %s page: want acme's run and no other", name)
		}
	}
	overview := lists["overview"]
	if !strings.Contains(overview, "shown to users who see every tenant") || strings.Contains(overview, "Leader:") || strings.Contains(overview, "running now") {
		t.Error("carol's overview shows the activity or the workers of every tenant")
	}
	if !strings.Contains(overview, "tenants: acme") {
		t.Error("carol's pages do not say which tenants she sees")
	}
	if body := carol.page("/runs?tenant=initech", http.StatusBadRequest); !strings.Contains(body, "you see the runs of tenants acme only") ||
		strings.Contains(body, initech.String()) {
		t.Error("carol's listing of initech's runs does not refuse")
	}
	token := carol.token("/runs/" + acme.String())
	confirmed := url.Values{"csrf": {token}, "confirm": {"yes"}}
	for _, path := range []string{"/runs/" + initech.String(), "/runs/" + initech.String() + "/input.json", "/runs/" + initech.String() + "/steps/reserve/output.json",
		"/runs/" + initech.String() + "/retry", "/live/runs/" + initech.String()} {
		code, body := carol.get(path)
		if code != http.StatusNotFound || strings.Contains(body, "initech&#39;s") || strings.Contains(body, "initech's") {
			t.Errorf("carol's GET %s = %d; want 404, as for a run that does not exist", path, code)
		}
	}
	if code, _, _ := carol.post("/runs/"+initech.String()+"/retry", confirmed, nil); code != http.StatusNotFound {
		t.Errorf("carol's retry of initech's run = %d, want 404", code)
	}
	if st := b.h.Result(initech).Status; st != runtime.RunFailed {
		t.Fatalf("initech's run is %s after carol's retry", st)
	}
	if code, _, _ := carol.post("/runs/"+acme.String()+"/retry", confirmed, nil); code != http.StatusSeeOther {
		t.Errorf("carol's retry of acme's run = %d, want 303", code)
	}

	// Dave sees acme and globex, one tenant's listing at a time.
	if body := dave.page("/runs", http.StatusOK); !strings.Contains(body, acme.String()) || strings.Contains(body, globex.String()) {
		t.Error("dave's runs list does not show acme's runs, his first tenant's")
	}
	if body := dave.page("/runs?tenant=globex", http.StatusOK); !strings.Contains(body, globex.String()) || strings.Contains(body, initech.String()) {
		t.Error("dave's listing of globex shows the wrong runs")
	}
	body := dave.page("/", http.StatusOK)
	if !strings.Contains(body, globex.String()) || strings.Contains(body, initech.String()) {
		t.Error("dave's overview does not show globex's failed run, or shows initech's")
	}
	dave.page("/runs/"+globex.String(), http.StatusOK)
	dave.page("/runs/"+initech.String(), http.StatusNotFound)
	// Alice sees every tenant.
	if body := b.as("alice", "ecila").page("/", http.StatusOK); !strings.Contains(body, initech.String()) || strings.Contains(body, "shown to users who see every tenant") {
		t.Error("alice's overview does not show every tenant, or the workers")
	}
}
