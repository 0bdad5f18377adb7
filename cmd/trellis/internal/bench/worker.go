package bench

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// The worker protocol. A worker process connects, registers the bench
// workflows and writes workerReady on its standard output; it starts its
// engine when it reads workerGo on its standard input, so that every
// worker of a case starts at once. It stops gracefully on SIGTERM (its
// context) or when its standard input ends, which is what happens when
// the harness dies.
const (
	workerReady = "ready"
	workerGo    = "go"
	// workerGrace bounds a worker's graceful stop.
	workerGrace = 15 * time.Second
)

// WorkerOptions configure one worker process.
type WorkerOptions struct {
	// DatabaseURL is the Postgres connection string, without a schema.
	DatabaseURL string
	// Schema is the schema to work in (its search_path).
	Schema string
	// Name is the worker id the engine claims tasks under.
	Name string
	// Engine holds the engine settings.
	Engine EngineSettings
}

// Validate reports options a worker cannot run with.
func (o WorkerOptions) Validate() error {
	if o.DatabaseURL == "" {
		return errors.New("no database: pass -database-url")
	}
	if o.Schema == "" {
		return errors.New("no schema: pass -schema")
	}
	return o.Engine.Validate()
}

// Flags defines the worker's flags on fs, writing into o. Args produces
// the matching command line.
func (o *WorkerOptions) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.DatabaseURL, "database-url", o.DatabaseURL, "Postgres connection `string`")
	fs.StringVar(&o.Schema, "schema", o.Schema, "`schema` to work in")
	fs.StringVar(&o.Name, "name", o.Name, "worker `id` (default: the engine's)")
	EngineFlags(fs, &o.Engine)
}

// EngineFlags defines -concurrency, -claim-batch and -poll on fs, writing
// into s: the flags of the worker and of commands that start bench
// engines.
func EngineFlags(fs *flag.FlagSet, s *EngineSettings) {
	fs.IntVar(&s.Concurrency, "concurrency", s.Concurrency, "steps an engine runs at once (0: the engine's default)")
	fs.IntVar(&s.ClaimBatch, "claim-batch", s.ClaimBatch, "most tasks claimed at once (0: the engine's default)")
	fs.DurationVar(&s.PollInterval, "poll", s.PollInterval, "poll interval of an idle engine (0: the engine's default)")
	fs.BoolVar(&s.OTel, "otel", s.OTel, "turn OpenTelemetry metrics and traces on (SDK providers, exporters that discard)")
	fs.BoolVar(&s.NoHandOff, "no-hand-off", s.NoHandOff, "claim every task from the queue: no hand-off of a child to the worker that completed its parent")
}

// Args is the command line that Flags parses back into o, but for the
// database URL, which may hold a password that every user of the machine
// could read in a command line (ps): Env passes it.
func (o WorkerOptions) Args() []string {
	return []string{
		"-schema", o.Schema, "-name", o.Name,
		"-concurrency", strconv.Itoa(o.Engine.Concurrency),
		"-claim-batch", strconv.Itoa(o.Engine.ClaimBatch),
		"-poll", o.Engine.PollInterval.String(),
		"-otel=" + strconv.FormatBool(o.Engine.OTel),
		"-no-hand-off=" + strconv.FormatBool(o.Engine.NoHandOff),
	}
}

// DatabaseURLEnv is the environment variable a worker process reads its
// database URL from (the trellis command's default for -database-url).
const DatabaseURLEnv = "TRELLIS_DATABASE_URL"

// Env is the environment entry that passes o's database URL to a worker
// process, beside Args.
func (o WorkerOptions) Env() string {
	return DatabaseURLEnv + "=" + o.DatabaseURL
}

// RunWorker is the body of a worker process: it executes the bench
// workflows with no-op code until ctx ends (SIGTERM) or control (its
// standard input) ends, then stops the engine gracefully. It follows the
// worker protocol on control and out; log receives the engine's logs.
func RunWorker(ctx context.Context, o WorkerOptions, control io.Reader, out io.Writer, log *slog.Logger) error {
	if err := o.Validate(); err != nil {
		return err
	}
	pool, err := pgstore.Connect(ctx, pgstore.WithSearchPath(o.DatabaseURL, o.Schema))
	if err != nil {
		return err
	}
	defer pool.Close()
	cfg := runtime.Config{Store: pgstore.New(pool), Logger: log, WorkerID: o.Name}
	o.Engine.apply(&cfg)
	shutdown := o.Engine.withTelemetry(&cfg)
	defer func() { _ = shutdown(context.WithoutCancel(ctx)) }()
	engine, err := runtime.New(cfg)
	if err != nil {
		return fmt.Errorf("creating the engine: %w", err)
	}
	if _, err := register(engine, workerShapes()...); err != nil {
		return err
	}
	// The reader ends at control's EOF, which the harness causes when it
	// stops us or exits. When SIGTERM comes first it may outlive RunWorker,
	// blocked on control, until the process exits right after.
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(control)
		for sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
	}()
	if _, err := fmt.Fprintln(out, workerReady); err != nil {
		return fmt.Errorf("telling the harness we are ready: %w", err)
	}
	started := false
	for !started {
		select {
		case <-ctx.Done():
			return nil
		case l, ok := <-lines:
			if !ok {
				return nil // the harness went away before starting us
			}
			started = l == workerGo
		}
	}
	if err := engine.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-drain(lines):
	}
	grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), workerGrace)
	defer cancel()
	if err := engine.Stop(grace); err != nil {
		return fmt.Errorf("stopping the engine: %w", err)
	}
	return nil
}

// drain consumes lines and returns a channel closed once lines is.
func drain(lines <-chan string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range lines {
		}
	}()
	return done
}
