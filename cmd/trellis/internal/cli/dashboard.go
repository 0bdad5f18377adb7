package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/effectivelabs/trellis/internal/suggest"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// DashboardCommand is trellis dashboard: the web UI over a database.
type DashboardCommand struct {
	// Clock tells the time for ages and waits; nil is the system clock.
	Clock clock.Clock
	// Listening, when set, is told the dashboard's URL once it listens
	// (tests serve on port 0).
	Listening func(url string)
	// Stdin is where hash-password reads the password; os.Stdin when nil.
	Stdin io.Reader
}

// Name implements Command.
func (DashboardCommand) Name() string { return "dashboard" }

// Summary implements Command.
func (DashboardCommand) Summary() string {
	return "serve the web dashboard: runs, their DAGs and steps, the queue, workers"
}

// DashboardOptions are the options of trellis dashboard.
type DashboardOptions struct {
	// DatabaseURL is the Postgres connection string; its search_path (if
	// any) picks the schema.
	DatabaseURL string
	// Addr is the address to listen on, host and port.
	Addr string
	// AllowRemote allows an Addr that is not a loopback address; it
	// needs Users and AllowedHosts.
	AllowRemote bool
	// AllowedHosts are the host names the dashboard answers to besides
	// the loopback ones (dashboard.Options.AllowedHosts).
	AllowedHosts []string
	// Users is the users file: with it, every request signs in (HTTP
	// Basic); without it, everyone who reaches the dashboard is an
	// operator.
	Users string
	// MaxStreams caps the live-update streams open at once; zero is
	// dashboard.DefaultMaxStreams.
	MaxStreams int
	// ReadOnly hides the actions and refuses them.
	ReadOnly bool
	// Prefix is the path the dashboard is served under ("/trellis").
	Prefix string
	// PollInterval is how often live pages are read again.
	PollInterval time.Duration
	// StaleAfter and StuckAfter are the engines' (a worker silent that
	// long counts as silent; a run without progress that long is stuck).
	StaleAfter, StuckAfter time.Duration
}

// Validate reports options the dashboard cannot run with.
func (o DashboardOptions) Validate() error {
	var errs []error
	if o.DatabaseURL == "" {
		errs = append(errs, errors.New("no database: pass -database-url or set TRELLIS_DATABASE_URL"))
	}
	if err := checkAddr(o.Addr, o.AllowRemote); err != nil {
		errs = append(errs, err)
	}
	if o.AllowRemote && (o.Users == "" || len(o.AllowedHosts) == 0) {
		errs = append(errs, errors.New("-allow-remote needs -users (who may sign in) and -allowed-hosts (the names other machines reach the dashboard by): "+
			"a dashboard other machines can reach must know who asks, and answer only to its own names"))
	}
	if err := dashboard.CheckAllowedHosts(o.AllowedHosts); err != nil {
		errs = append(errs, fmt.Errorf("-allowed-hosts: %w", err))
	}
	if o.MaxStreams < 0 {
		errs = append(errs, fmt.Errorf("-max-streams %d: give a positive number, or 0 for %d", o.MaxStreams, dashboard.DefaultMaxStreams))
	}
	if o.Prefix != "" && (!strings.HasPrefix(o.Prefix, "/") || strings.ContainsAny(o.Prefix, "?#") || strings.Contains(o.Prefix, "//")) {
		errs = append(errs, fmt.Errorf("-prefix %q: give a path such as /trellis", o.Prefix))
	}
	if o.PollInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("-poll %v: use at least 100ms", o.PollInterval))
	}
	if o.StaleAfter < 2*time.Second {
		errs = append(errs, fmt.Errorf("-stale-after %v: use at least 2s (the engines' StaleAfter, 30s unless configured)", o.StaleAfter))
	}
	if o.StuckAfter <= 0 {
		errs = append(errs, fmt.Errorf("-stuck-after %v: give a positive duration (the engines' StuckAfter, 10m unless configured)", o.StuckAfter))
	}
	return errors.Join(errs...)
}

// checkAddr refuses an address other hosts can reach, unless allowed.
func checkAddr(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: give a host and port such as 127.0.0.1:8080", addr)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	what := "a non-loopback address"
	if host == "" {
		what = "every interface"
	}
	return fmt.Errorf("-addr %q listens on %s, where other machines can reach the dashboard: "+
		"pass -allow-remote with -users and -allowed-hosts if that is what you want (see docs/how-to/dashboard-access.md), or listen on 127.0.0.1", addr, what)
}

// Run implements Command.
func (c DashboardCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if sub, rest := splitSubcommand(args, []string{"hash-password"}); sub == "hash-password" {
		return c.hashPassword(rest, stdout, stderr)
	}
	var o DashboardOptions
	var hosts string
	fs := newFlagSet(c.Name(), "[flags]",
		"Dashboard serves the web UI over a Trellis database: an overview of the last hour,\nthe queue and the workers; each workflow's DAG and failure rate; the runs, filtered\nas trellis runs list filters them; and each run's DAG coloured by step status, its\ntimeline, input, outputs, errors and events, with cancel, retry and rerun. Pages\nupdate live. It listens on 127.0.0.1 unless -allow-remote is given, answers only to the\nloopback names and -allowed-hosts, and with -users asks everyone to sign in.\n\ntrellis dashboard hash-password NAME makes a line of a users file.")
	addDatabaseURLFlag(fs, &o.DatabaseURL, os.Getenv("TRELLIS_DATABASE_URL"), "Postgres connection `string` (default $TRELLIS_DATABASE_URL)")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "`host:port` to listen on")
	fs.BoolVar(&o.AllowRemote, "allow-remote", false, "allow an -addr other machines can reach (needs -users and -allowed-hosts)")
	fs.StringVar(&hosts, "allowed-hosts", "", "comma-separated host `names` the dashboard answers to besides localhost and the loopback addresses\n(ops.example.com, ops.example.com:8443, *.example.com); other names get 421")
	fs.StringVar(&o.Users, "users", "", "users `file` (lines name:bcrypt-hash[:read-only|operator[:tenant,...]]): everyone signs in with HTTP Basic;\nwithout it, everyone who reaches the dashboard may act")
	fs.IntVar(&o.MaxStreams, "max-streams", dashboard.DefaultMaxStreams, "most live-update streams open at once (pages beyond it do not update live)")
	fs.BoolVar(&o.ReadOnly, "read-only", false, "show no buttons that act (trigger, cancel, retry, rerun, schedule pause/resume/delete), and refuse those actions (403), for every user")
	fs.StringVar(&o.Prefix, "prefix", "", "serve under this `path` (/trellis), as behind a proxy that forwards it")
	fs.DurationVar(&o.PollInterval, "poll", 2*time.Second, "how often open pages are read again for live updates (once for all browsers)")
	fs.DurationVar(&o.StaleAfter, "stale-after", 30*time.Second, "how long a worker may go without heartbeating before it counts as silent (the engines' StaleAfter)")
	fs.DurationVar(&o.StuckAfter, "stuck-after", 10*time.Minute, "how long a run may make no progress before it shows as stuck (the engines' StuckAfter)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		hint := ""
		if suggest.Closest(fs.Arg(0), []string{"hash-password"}) != "" {
			hint = `; did you mean "hash-password"?`
		}
		fmt.Fprintf(stderr, "trellis dashboard: unexpected argument %q%s\n", fs.Arg(0), hint)
		return ExitUsage
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			o.AllowedHosts = append(o.AllowedHosts, h)
		}
	}
	return c.Serve(ctx, o, stdout, stderr)
}

// Serve runs trellis dashboard with opts until ctx ends or the process is
// interrupted or terminated, and returns its exit code.
func (c DashboardCommand) Serve(ctx context.Context, o DashboardOptions, stdout, stderr io.Writer) int {
	o.Prefix = strings.TrimRight(o.Prefix, "/")
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "trellis dashboard: %v\n", err)
		return ExitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.serve(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "trellis dashboard: %v\n", err)
		return ExitProblems
	}
	return ExitOK
}

func (c DashboardCommand) serve(ctx context.Context, o DashboardOptions, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var users *dashboard.Users
	if o.Users != "" {
		var err error
		if users, err = dashboard.LoadUsers(o.Users); err != nil {
			return err
		}
	}
	pool, err := pgstore.Connect(ctx, o.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	engine, err := runtime.New(runtime.Config{
		Store: pgstore.New(pool), Clock: c.Clock, Logger: log, StaleAfter: o.StaleAfter, StuckAfter: o.StuckAfter,
		HeartbeatInterval: min(5*time.Second, o.StaleAfter/2),
	})
	if err != nil {
		return err
	}
	opts := dashboard.Options{
		Prefix: o.Prefix, ReadOnly: o.ReadOnly, PollInterval: o.PollInterval, Logger: log, Clock: c.Clock,
		MaxStreams: o.MaxStreams,
	}
	if len(o.AllowedHosts) > 0 {
		// The loopback names stay allowed, for the machine's own browser.
		opts.AllowedHosts = append([]string{"localhost"}, o.AllowedHosts...)
	}
	if users != nil {
		opts.Authenticate = users.Authenticate
	}
	dash, err := dashboard.New(ops.New(engine), opts)
	if err != nil {
		return err
	}
	defer dash.Close()
	var handler http.Handler = dash
	if o.Prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(o.Prefix+"/", dash)
		mux.Handle(o.Prefix, http.RedirectHandler(o.Prefix+"/", http.StatusMovedPermanently))
		mux.Handle("/{$}", http.RedirectHandler(o.Prefix+"/", http.StatusFound))
		handler = mux
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	url := fmt.Sprintf("http://%s%s/", ln.Addr(), o.Prefix)
	mode := ""
	if o.ReadOnly {
		mode = " (read-only)"
	}
	switch {
	case o.Users != "":
		mode += " to the users of " + o.Users
	case o.ReadOnly:
		mode += " without sign-in: whoever reaches it may look"
	default:
		mode += " without sign-in: whoever reaches it may act"
	}
	fmt.Fprintf(stdout, "trellis dashboard: serving %s%s; Ctrl-C stops it\n", url, mode)
	if c.Listening != nil {
		c.Listening(url)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	srv.RegisterOnShutdown(dash.Close) // live streams end, so that Shutdown need not wait for them
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	fmt.Fprintln(stdout, "trellis dashboard: stopped")
	return nil
}

// hashPassword is trellis dashboard hash-password: it reads a password
// (twice, without echo, from a terminal) and prints a line of a users
// file with its bcrypt hash.
func (c DashboardCommand) hashPassword(args []string, stdout, stderr io.Writer) int {
	var role, tenants string
	fs := newFlagSet(c.Name()+" hash-password", "[flags] NAME",
		"Hash-password reads a password from standard input (asking twice, without echo,\non a terminal) and prints a line of a users file for trellis dashboard -users:\nNAME:bcrypt-hash:ROLE[:TENANTS]. Add it to the file; the password is not kept.")
	fs.StringVar(&role, "role", dashboard.RoleReadOnly, "read-only (sees, does not act) or operator (triggers, cancels, retries, reruns, changes schedules)")
	fs.StringVar(&tenants, "tenants", "", "comma-separated `tenants` the user sees, alone; empty for every tenant")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "trellis dashboard hash-password: give one user NAME")
		return ExitUsage
	}
	name := fs.Arg(0)
	if strings.Contains(name, ":") {
		fmt.Fprintf(stderr, "trellis dashboard hash-password: user name %q: a name cannot hold a colon, which separates a line's fields\n", name)
		return ExitUsage
	}
	line := name + ":$2a$04$" + strings.Repeat("x", 53) + ":" + role
	if tenants != "" {
		line += ":" + tenants
	}
	// The line must read back: the name, role and tenants are checked as
	// the dashboard checks them.
	if _, err := dashboard.ParseUsers(strings.NewReader(line), "the line"); err != nil && !strings.Contains(err.Error(), "bcrypt hash") {
		fmt.Fprintf(stderr, "trellis dashboard hash-password: %v\n", err)
		return ExitUsage
	}
	password, err := c.readPassword(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "trellis dashboard hash-password: %v\n", err)
		return ExitUsage
	}
	hash, err := dashboard.HashPassword(password)
	if err != nil {
		fmt.Fprintf(stderr, "trellis dashboard hash-password: %v\n", err)
		return ExitUsage
	}
	line = name + ":" + hash + ":" + role
	if tenants != "" {
		line += ":" + tenants
	}
	fmt.Fprintln(stdout, line)
	return ExitOK
}

// readPassword reads a password: twice, without echo, from a terminal,
// or the first line of standard input otherwise.
func (c DashboardCommand) readPassword(stderr io.Writer) (string, error) {
	if c.Stdin == nil && isTerminal(os.Stdin) {
		fd := int(os.Stdin.Fd())
		fmt.Fprint(stderr, "Password: ")
		first, err := term.ReadPassword(fd)
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
		fmt.Fprint(stderr, "Again: ")
		again, err := term.ReadPassword(fd)
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
		if string(first) != string(again) {
			return "", errors.New("the passwords differ")
		}
		return string(first), nil
	}
	in := c.Stdin
	if in == nil {
		in = os.Stdin
	}
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
