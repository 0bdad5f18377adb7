package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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
		{"remote, allowed", func(o *DashboardOptions) { o.Addr, o.AllowRemote = "0.0.0.0:8080", true }, ""},
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
