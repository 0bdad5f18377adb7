package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// bundle is a dashboard over the memory store with the probe workflow,
// driven by hand on a virtual clock, served by an httptest server.
type bundle struct {
	t        *testing.T
	h        *trellistest.Harness
	probe    *probe
	workflow *runtime.Workflow
	dash     *dashboard.Dashboard
	srv      *httptest.Server
	// base is the dashboard's URL (with its prefix, without a trailing
	// slash).
	base   string
	client *http.Client
}

func setup(t *testing.T, opts dashboard.Options, harness ...trellistest.Option) *bundle {
	t.Helper()
	h := trellistest.New(t, harness...)
	b := &bundle{t: t, h: h, probe: &probe{}}
	b.workflow = b.probe.register(t, h.Engine)
	if opts.PollInterval == 0 {
		opts.PollInterval = 10 * time.Millisecond
	}
	opts.Clock = h.Clock
	dash, err := dashboard.New(ops.New(h.Engine), opts)
	if err != nil {
		t.Fatal(err)
	}
	b.dash = dash
	var handler http.Handler = b.dash
	prefix := strings.TrimRight(opts.Prefix, "/")
	if prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(prefix+"/", b.dash)
		handler = mux
	}
	b.srv = httptest.NewServer(handler)
	b.base = b.srv.URL + prefix
	jar, _ := cookiejar.New(nil)
	b.client = &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(func() {
		b.dash.Close()
		b.srv.Close()
	})
	return b
}

// trigger starts a probe run with input and runs it as far as it goes now.
func (b *bundle) trigger(input string, opts ...runtime.RunOption) runtime.RunID {
	b.t.Helper()
	ref, err := b.workflow.Trigger(b.t.Context(), json.RawMessage(input), opts...)
	if err != nil {
		b.t.Fatalf("triggering a probe run: %v", err)
	}
	b.h.RunUntilIdle()
	return ref.ID
}

// failed triggers a probe run that fails at charge.
func (b *bundle) failed(input string, opts ...runtime.RunOption) runtime.RunID {
	b.t.Helper()
	b.probe.failing.Store(true)
	defer b.probe.failing.Store(false)
	id := b.trigger(input, opts...)
	if st := b.h.Result(id).Status; st != runtime.RunFailed {
		b.t.Fatalf("run %s is %s, want FAILED", id, st)
	}
	return id
}

// get fetches path (under the dashboard's base) and returns its status
// and body.
func (b *bundle) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.client.Get(b.base + path)
	if err != nil {
		b.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// page fetches path and fails the test unless it answers want.
func (b *bundle) page(path string, want int) string {
	b.t.Helper()
	code, body := b.get(path)
	if code != want {
		b.t.Fatalf("GET %s = %d, want %d; body:\n%s", path, code, want, body)
	}
	return body
}

var tokenField = regexp.MustCompile(`name="trellis-csrf" content="([^"]+)"`)

// token is the CSRF token of the page at path, which also sets the
// client's cookie.
func (b *bundle) token(path string) string {
	b.t.Helper()
	m := tokenField.FindStringSubmatch(b.page(path, http.StatusOK))
	if m == nil {
		b.t.Fatalf("page %s carries no CSRF token", path)
	}
	return m[1]
}

// post posts form to path with headers, and returns the response's status,
// Location and body.
func (b *bundle) post(path string, form url.Values, headers map[string]string) (int, string, string) {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

// stream is a live stream of a page, read event by event.
type stream struct {
	events chan string
	cancel context.CancelFunc
	done   chan struct{}
}

// live opens the live stream at path; it closes when the test ends.
func (b *bundle) live(path string) *stream {
	b.t.Helper()
	ctx, cancel := context.WithCancel(b.t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.base+path, nil)
	resp, err := b.client.Do(req) //nolint:bodyclose // the goroutine reading the stream below closes it
	if err != nil {
		cancel()
		b.t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		resp.Body.Close()
		b.t.Fatalf("GET %s = %d %s, want an event stream", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &stream{events: make(chan string, 100), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		defer close(s.events)
		var data []string
		buf := make([]byte, 0, 64<<10)
		rest := ""
		for {
			n, err := resp.Body.Read(buf[:cap(buf)])
			rest += string(buf[:n])
			for {
				i := strings.Index(rest, "\n")
				if i < 0 {
					break
				}
				line := rest[:i]
				rest = rest[i+1:]
				switch {
				case strings.HasPrefix(line, "data: "):
					data = append(data, strings.TrimPrefix(line, "data: "))
				case line == "" && data != nil:
					s.events <- strings.Join(data, "\n")
					data = nil
				}
			}
			if err != nil {
				return
			}
		}
	}()
	b.t.Cleanup(s.close)
	return s
}

func (s *stream) close() {
	s.cancel()
	<-s.done
}

// next returns the next event whose data contains want, failing the test
// if the stream ends first or nothing comes within a generous limit.
func (s *stream) next(t *testing.T, want string) string {
	t.Helper()
	limit := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the live stream ended before an update containing %q", want)
			}
			if strings.Contains(ev, want) {
				return ev
			}
		case <-limit:
			t.Fatalf("no live update containing %q", want)
		}
	}
}
