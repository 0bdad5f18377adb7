package dashboard

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// Options configure a Dashboard. The zero value serves at the root, to
// everyone who reaches it on a loopback name (localhost, 127.0.0.1,
// [::1]), with actions, polling every two seconds.
type Options struct {
	// Prefix is the path the dashboard is mounted under ("/trellis"), or
	// "" for the root. The handler expects request paths with the prefix
	// (mount it with mux.Handle(prefix+"/", dash)) and writes every link
	// with it.
	Prefix string
	// ReadOnly hides the forms and buttons that act (trigger, cancel, retry
	// and rerun a run; pause, resume and delete a schedule) and refuses their requests with 403:
	// for people who should look, not act.
	ReadOnly bool
	// PollInterval is how often the live poller reads what open pages
	// show; 2s when zero. Whatever the number of browsers, it reads once
	// per interval.
	PollInterval time.Duration
	// AllowedHosts are the host names the dashboard answers to; any other
	// Host gets 421 and nothing else, which defeats DNS rebinding. An
	// entry is a name on any port ("ops.example.com"), a name with a port
	// ("ops.example.com:8443"), every name under a domain
	// ("*.example.com"), "localhost" for the loopback names and addresses,
	// or "*" for any host (when a proxy in front checks it). Empty means
	// the loopback names and addresses only.
	AllowedHosts []string
	// Authenticate tells who makes a request, or why they may not: an
	// error wrapping ErrUnauthenticated answers 401, ErrForbidden 403.
	// Every request passes through it, assets and live streams included,
	// so that the dashboard's own pages and permissions (User.ReadOnly,
	// User.Tenants) follow whatever sign-in the server in front uses (a
	// proxy's header, a session cookie). Users.Authenticate is HTTP Basic
	// over a users file. Nil lets everyone in as an unnamed operator.
	Authenticate func(*http.Request) (User, error)
	// TrustedOrigins are origins besides the request's own host that may
	// post actions ("https://ops.example.com"): set it when a proxy in
	// front rewrites the Host header. Their hosts need not be in
	// AllowedHosts.
	TrustedOrigins []string
	// MaxStreams caps the live-update streams open at once (each is an
	// open connection), DefaultMaxStreams when zero; MaxStreamsPerUser
	// caps those of one named user, DefaultMaxStreamsPerUser when zero.
	// Beyond either, a page's stream answers 503 with Retry-After, and
	// the page shows what it showed when loaded, without live updates.
	MaxStreams, MaxStreamsPerUser int
	// CSRFKey signs the tokens that guard actions. Give every replica of
	// a dashboard behind one load balancer the same key (32 random
	// bytes); when nil, a Dashboard makes a key of its own.
	CSRFKey []byte
	// Logger receives the dashboard's errors; nil discards them.
	Logger *slog.Logger
	// Clock tells the time for ages and waits; nil is the system clock.
	Clock clock.Clock
}

// Dashboard is the web UI's http.Handler. It is safe for concurrent use.
// Close it when done: it ends the live streams of open pages.
type Dashboard struct {
	admin   *ops.Admin
	opts    Options
	log     *slog.Logger
	clock   clock.Clock
	pages   *pages
	csrf    csrf
	hosts   hosts
	live    *hub
	streams *streamLimit
	handler http.Handler
}

// Defaults of Options.
const (
	DefaultMaxStreams        = 100
	DefaultMaxStreamsPerUser = 10
)

// New returns the dashboard of admin's store, or an error naming an entry
// of opts.AllowedHosts it cannot read. It starts nothing: the live
// poller runs only while a page is open.
func New(admin *ops.Admin, opts Options) (*Dashboard, error) {
	opts.Prefix = strings.TrimRight(opts.Prefix, "/")
	allowed, err := newHosts(opts.AllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.MaxStreamsPerUser <= 0 {
		opts.MaxStreamsPerUser = DefaultMaxStreamsPerUser
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 2 * time.Second
	}
	d := &Dashboard{admin: admin, opts: opts, log: opts.Logger, clock: opts.Clock, hosts: allowed,
		streams: newStreamLimit(opts.MaxStreams, opts.MaxStreamsPerUser)}
	if d.log == nil {
		d.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if d.clock == nil {
		d.clock = clock.Real()
	}
	key := opts.CSRFKey
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand)
	}
	d.csrf = csrf{key: key, trusted: opts.TrustedOrigins, hosts: allowed, path: opts.Prefix + "/"}
	d.pages = mustParsePages()
	d.live = newHub(opts.PollInterval, d.log, func(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]int, error) {
		return admin.EventCounts(ctx, ids...)
	})
	d.handler = d.routes()
	return d, nil
}

// Close ends the live streams of every open page and stops the poller.
// Call it before (or register it with) http.Server.Shutdown, which
// otherwise waits for those streams. Pages served afterwards do not
// update live.
func (d *Dashboard) Close() { d.live.close() }

// ServeHTTP implements http.Handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	// Pages, downloads and streams carry run data: no cache keeps them
	// (assets say otherwise).
	h.Set("Cache-Control", "no-store")
	if !d.hosts.allows(r.Host) {
		d.log.Warn("dashboard: refused a request for another host", "host", oneLine(r.Host, 200), "path", oneLine(r.URL.Path, 200), "remote", r.RemoteAddr)
		misdirected(w)
		return
	}
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			d.log.Error("dashboard: handler panicked", "path", r.URL.Path, "panic", fmt.Sprint(v))
			d.errorPage(w, r, http.StatusInternalServerError, "The dashboard failed to show this page; its log says why.")
		}
	}()
	r, ok := d.authenticate(w, r)
	if !ok {
		return
	}
	d.handler.ServeHTTP(w, r)
}

// routes maps paths (without the prefix) to handlers.
func (d *Dashboard) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.overview)
	mux.HandleFunc("GET /workflows", d.workflows)
	mux.HandleFunc("GET /workflows/{name}", d.workflow)
	mux.HandleFunc("POST /workflows/{name}/runs", d.trigger)
	mux.HandleFunc("POST /workflows/{name}/schedules/{schedule}/{action}", d.actSchedule)
	mux.HandleFunc("GET /workflows/{name}/schedules/{schedule}/{action}", d.confirmSchedule)
	mux.HandleFunc("GET /workers", d.workers)
	mux.HandleFunc("GET /queue", d.queue)
	mux.HandleFunc("GET /schedules", d.schedules)
	mux.HandleFunc("GET /live/workers", d.liveWorkers)
	mux.HandleFunc("GET /live/queue", d.liveQueue)
	mux.HandleFunc("GET /live/schedules", d.liveSchedules)
	mux.HandleFunc("POST /workflows/{name}/{action}", d.actWorkflowPause)
	mux.HandleFunc("GET /workflows/{name}/{action}", d.confirmWorkflowPause)
	mux.HandleFunc("GET /runs", d.runs)
	mux.HandleFunc("GET /search", d.search)
	mux.HandleFunc("GET /runs/{id}", d.run)
	mux.HandleFunc("GET /runs/{id}/input.json", d.runJSON)
	mux.HandleFunc("GET /runs/{id}/steps/{step}/output.json", d.runJSON)
	mux.HandleFunc("POST /runs/{id}/{action}", d.act)
	mux.HandleFunc("GET /runs/{id}/{action}", d.confirm)
	mux.HandleFunc("GET /live/overview", d.liveOverview)
	mux.HandleFunc("GET /live/runs", d.liveRuns)
	mux.HandleFunc("GET /live/runs/{id}", d.liveRun)
	mux.HandleFunc("GET /assets/{file}", d.asset)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		d.errorPage(w, r, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	})
	if d.opts.Prefix == "" {
		return mux
	}
	return http.StripPrefix(d.opts.Prefix, mux)
}

// url is a link to path (which starts with "/") under the prefix.
func (d *Dashboard) url(path string) string { return d.opts.Prefix + path }
