package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

func TestDashboardOptions(t *testing.T) {
	valid := DashboardOptions{DatabaseURL: "postgres://x", Addr: "127.0.0.1:8080", PollInterval: time.Second, StaleAfter: 30 * time.Second, StuckAfter: time.Minute}
	tests := []struct {
		name string
		edit func(*DashboardOptions)
		want string // "" when valid
	}{
		{"loopback", func(*DashboardOptions) {}, ""},
		{"localhost", func(o *DashboardOptions) { o.Addr = "localhost:9000" }, ""},
		{"IPv6 loopback", func(o *DashboardOptions) { o.Addr = "[::1]:8080" }, ""},
		{"every interface", func(o *DashboardOptions) { o.Addr = ":8080" }, "listens on every interface"},
		{"all IPv4", func(o *DashboardOptions) { o.Addr = "0.0.0.0:8080" }, "pass -allow-remote"},
		{"a LAN address", func(o *DashboardOptions) { o.Addr = "192.168.1.5:8080" }, "non-loopback address"},
		{"remote, without users or hosts", func(o *DashboardOptions) { o.Addr, o.AllowRemote = "0.0.0.0:8080", true }, "-allow-remote needs -users"},
		{"remote, without hosts", func(o *DashboardOptions) { o.Addr, o.AllowRemote, o.Users = "0.0.0.0:8080", true, "users" }, "-allowed-hosts"},
		{"remote, without users", func(o *DashboardOptions) {
			o.Addr, o.AllowRemote, o.AllowedHosts = "0.0.0.0:8080", true, []string{"ops.example.com"}
		}, "-users"},
		{"remote, allowed", func(o *DashboardOptions) {
			o.Addr, o.AllowRemote, o.Users, o.AllowedHosts = "0.0.0.0:8080", true, "users", []string{"ops.example.com"}
		}, ""},
		{"a URL as a host", func(o *DashboardOptions) { o.AllowedHosts = []string{"https://ops.example.com"} }, "-allowed-hosts: allowed host \"https://ops.example.com\""},
		{"no port", func(o *DashboardOptions) { o.Addr = "127.0.0.1" }, "give a host and port"},
		{"no database", func(o *DashboardOptions) { o.DatabaseURL = "" }, "no database"},
		{"relative prefix", func(o *DashboardOptions) { o.Prefix = "trellis" }, "-prefix"},
		{"prefix", func(o *DashboardOptions) { o.Prefix = "/ops/trellis" }, ""},
		{"fast polling", func(o *DashboardOptions) { o.PollInterval = time.Millisecond }, "-poll"},
	}
	for _, tt := range tests {
		o := valid
		tt.edit(&o)
		err := o.Validate()
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want %q", tt.name, err, tt.want)
		}
	}
	var out, errOut bytes.Buffer
	if code := Main(t.Context(), []string{"dashboard", "-database-url", "postgres://x", "-addr", "0.0.0.0:8080"}, &out, &errOut); code != ExitUsage ||
		!strings.Contains(errOut.String(), "-allow-remote") {
		t.Errorf("trellis dashboard -addr 0.0.0.0:8080 = %d, %q; want a usage error naming -allow-remote", code, errOut.String())
	}
}

// trellis dashboard hash-password prints a users file's line whose hash
// the dashboard accepts for that password, and refuses bad names, roles
// and passwords.
func TestDashboardHashPassword(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := DashboardCommand{Stdin: strings.NewReader("s3cret pass\n")}
	if code := cmd.Run(t.Context(), []string{"hash-password", "-role", "operator", "-tenants", "acme,globex", "ann"}, &out, &errOut); code != ExitOK {
		t.Fatalf("hash-password = %d: %s", code, errOut.String())
	}
	line := strings.TrimSpace(out.String())
	if strings.Contains(line, "s3cret") || !strings.HasPrefix(line, "ann:$2a$") || !strings.HasSuffix(line, ":operator:acme,globex") {
		t.Fatalf("hash-password printed %q", line)
	}
	users, err := dashboard.ParseUsers(strings.NewReader(line), "users")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth("ann", "s3cret pass")
	if u, err := users.Authenticate(req); err != nil || u.ReadOnly || len(u.Tenants) != 2 {
		t.Errorf("the printed line signs ann in as %+v, %v; want an operator of two tenants", u, err)
	}
	for _, tt := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"hash-password"}, "pw\n", "give one user NAME"},
		{[]string{"hash-password", "-role", "admin", "ann"}, "pw\n", `role "admin"`},
		{[]string{"hash-password", "a:b"}, "pw\n", "cannot hold a colon"},
		{[]string{"hash-password", "a b"}, "pw\n", "without spaces"},
		{[]string{"hash-password", "ann"}, "\n", "the password is empty"},
		{[]string{"hash-password", "ann"}, strings.Repeat("p", 100), "longer than 72 bytes"},
	} {
		out.Reset()
		errOut.Reset()
		cmd := DashboardCommand{Stdin: strings.NewReader(tt.stdin)}
		if code := cmd.Run(t.Context(), tt.args, &out, &errOut); code != ExitUsage || !strings.Contains(errOut.String(), tt.want) || out.Len() > 0 {
			t.Errorf("%v = %d, %q; want a usage error saying %q", tt.args, code, errOut.String(), tt.want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the command's writes while the
// test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// trellis dashboard serves the pages under its prefix and, when stopped,
// ends the live streams of open pages and exits cleanly.
func TestDashboardServesAndStops(t *testing.T) {
	_, schema := pgtest.PoolWithSchema(t)
	url := pgstore.WithSearchPath(pgtest.URL(), schema)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	listening := make(chan string, 1)
	cmd := DashboardCommand{Listening: func(u string) { listening <- u }}
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cmd.Run(ctx, []string{"-database-url", url, "-addr", "127.0.0.1:0", "-prefix", "/trellis", "-read-only"}, &out, &errOut)
	}()
	var base string
	select {
	case base = <-listening:
	case code := <-done:
		t.Fatalf("trellis dashboard exited %d: %s", code, errOut.String())
	}
	if !strings.HasSuffix(base, "/trellis/") || !strings.Contains(out.String(), "(read-only)") {
		t.Errorf("serving %q, said %q; want the prefix and read-only", base, out.String())
	}
	for path, want := range map[string]string{"": "Runs per minute", "runs": "No runs.", "workflows": "No workflow is stored yet"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) || !strings.Contains(string(body), "read-only") {
			t.Errorf("GET %s%s = %d; want a read-only page saying %q", base, path, resp.StatusCode, want)
		}
	}
	// The root redirects to the prefix.
	root := strings.TrimSuffix(base, "trellis/")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := client.Get(root); err != nil || resp.Header.Get("Location") != "/trellis/" {
		t.Errorf("GET / = %v, %v; want a redirect to /trellis/", resp, err)
	} else {
		resp.Body.Close()
	}

	// A page left open: its stream ends when the dashboard stops.
	resp, err := http.Get(base + "live/overview")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	if line, err := lines.ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry:") {
		t.Fatalf("the live stream began %q, %v", line, err)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("trellis dashboard exited %d after being stopped: %s", code, errOut.String())
	}
	if _, err := io.ReadAll(lines); err != nil {
		t.Errorf("the open stream ended with %v, want its end", err)
	}
	if !strings.Contains(out.String(), "stopped") {
		t.Errorf("output %q does not say the dashboard stopped", out.String())
	}
}

// With -users, trellis dashboard asks everyone to sign in; with
// -allowed-hosts, it answers those names besides the loopback ones.
func TestDashboardSignsIn(t *testing.T) {
	_, schema := pgtest.PoolWithSchema(t)
	url := pgstore.WithSearchPath(pgtest.URL(), schema)
	hash, err := dashboard.HashPassword("pw")
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("ann:"+hash+":operator\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	listening := make(chan string, 1)
	cmd := DashboardCommand{Listening: func(u string) { listening <- u }}
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cmd.Run(ctx, []string{"-database-url", url, "-addr", "127.0.0.1:0", "-users", users, "-allowed-hosts", "ops.example.com, *.ops.example.net"}, &out, &errOut)
	}()
	var base string
	select {
	case base = <-listening:
	case code := <-done:
		t.Fatalf("trellis dashboard exited %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "to the users of "+users) {
		t.Errorf("said %q; want the users file named", out.String())
	}
	type reply struct {
		StatusCode int
		Header     http.Header
	}
	get := func(host, name, password string) (reply, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"runs", nil)
		if host != "" {
			req.Host = host
		}
		if name != "" {
			req.SetBasicAuth(name, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return reply{StatusCode: resp.StatusCode, Header: resp.Header}, string(body)
	}
	for _, tt := range []struct {
		host, name, password string
		want                 int
	}{
		{"", "", "", http.StatusUnauthorized},
		{"", "ann", "Wr0ng-pa55", http.StatusUnauthorized},
		{"", "ann", "pw", http.StatusOK},
		{"ops.example.com", "ann", "pw", http.StatusOK},
		{"a.ops.example.net:443", "ann", "pw", http.StatusOK},
		{"evil.test", "ann", "pw", http.StatusMisdirectedRequest},
	} {
		resp, body := get(tt.host, tt.name, tt.password)
		if resp.StatusCode != tt.want {
			t.Errorf("GET /runs with Host %q as %q = %d %q; want %d", tt.host, tt.name, resp.StatusCode, body, tt.want)
		}
		if tt.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("a 401 without a Basic challenge: %q", resp.Header.Get("WWW-Authenticate"))
		}
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("trellis dashboard exited %d: %s", code, errOut.String())
	}
	if strings.Contains(errOut.String(), "Wr0ng-pa55") || !strings.Contains(errOut.String(), "wrong name or password") {
		t.Errorf("the log shows a password, or not the failed sign-in: %s", errOut.String())
	}

	// A users file the dashboard cannot read stops it before it serves.
	if err := os.WriteFile(users, []byte("ann:hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out2, errOut2 bytes.Buffer
	code := DashboardCommand{}.Run(t.Context(), []string{"-database-url", url, "-addr", "127.0.0.1:0", "-users", users}, &out2, &errOut2)
	if code == ExitOK || !strings.Contains(errOut2.String(), users+":1: user \"ann\"") || strings.Contains(errOut2.String(), "hunter2") {
		t.Errorf("a bad users file: exit %d, %q; want the file and line, and not the line's password", code, errOut2.String())
	}
}
