package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// WorkerCommand returns the command that runs one worker process with the
// given arguments (WorkerOptions.Args): it must call RunWorker with them,
// its standard input and output. The harness sets the command's standard
// streams itself.
type WorkerCommand func(args []string) *exec.Cmd

// readyTimeout bounds how long a worker process may take to connect and
// say it is ready.
const readyTimeout = 60 * time.Second

// cluster is a set of worker processes on one schema. Its owner calls
// kill when done (deferred), whatever happened: it ends every process
// still alive.
type cluster struct {
	procs []*workerProc
}

type workerProc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ready  *readyWriter
	stderr *logTail
	exited chan struct{} // closed when the process has been waited for
	err    error         // its exit status, once exited is closed
}

// startCluster starts n worker processes on db and waits until each is
// ready. On error, the processes already started are killed.
func startCluster(ctx context.Context, db *database, cmd WorkerCommand, n int, settings EngineSettings) (*cluster, error) {
	if cmd == nil {
		return nil, errors.New("no worker command: Options.WorkerCommand is required for Postgres scenarios")
	}
	c := &cluster{}
	for i := range n {
		o := WorkerOptions{DatabaseURL: db.url, Schema: db.schema, Name: fmt.Sprintf("bench-%d", i+1), Engine: settings}
		p, err := startWorker(cmd, o)
		if err != nil {
			c.kill()
			return nil, err
		}
		c.procs = append(c.procs, p)
	}
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	for _, p := range c.procs {
		select {
		case <-p.ready.ch:
		case <-p.exited:
			c.kill()
			err := p.err
			if err == nil {
				err = errors.New("exit status 0")
			}
			return nil, fmt.Errorf("worker %s exited before it was ready: %w%s", p.name, err, p.stderr.excerpt())
		case <-deadline.C:
			c.kill()
			return nil, fmt.Errorf("worker %s not ready after %v%s", p.name, readyTimeout, p.stderr.excerpt())
		case <-ctx.Done():
			c.kill()
			return nil, ctx.Err()
		}
	}
	return c, nil
}

func startWorker(cmd WorkerCommand, o WorkerOptions) (*workerProc, error) {
	p := &workerProc{name: o.Name, cmd: cmd(o.Args()), ready: newReadyWriter(), stderr: &logTail{}, exited: make(chan struct{})}
	// The database URL goes in the worker's environment (the last entry
	// wins), not its command line, which every user of the machine can
	// read (ps).
	env := p.cmd.Env
	if env == nil {
		env = os.Environ()
	}
	p.cmd.Env = slices.Concat(env, []string{o.Env()})
	p.cmd.Stdout = p.ready
	p.cmd.Stderr = p.stderr
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting worker %s: %w", o.Name, err)
	}
	p.stdin = stdin
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting worker %s: %w", o.Name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// cpu is the CPU time the worker processes have used since they
// started; ok is false when /proc cannot tell.
func (c *cluster) cpu() (total time.Duration, ok bool) {
	for _, p := range c.procs {
		cpu, ok := processCPU(p.cmd.Process.Pid)
		if !ok {
			return 0, false
		}
		total += cpu
	}
	return total, true
}

// start tells every worker to start its engine.
func (c *cluster) start() error {
	for _, p := range c.procs {
		if _, err := io.WriteString(p.stdin, workerGo+"\n"); err != nil {
			return fmt.Errorf("starting worker %s: %w", p.name, err)
		}
	}
	return nil
}

// stop stops every worker gracefully (SIGTERM), waiting up to a grace
// period, and kills those still running after it. It reports workers that
// failed or had to be killed.
func (c *cluster) stop() error {
	for _, p := range c.procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	grace := time.NewTimer(workerGrace + 5*time.Second)
	defer grace.Stop()
	var errs []error
	for _, p := range c.procs {
		select {
		case <-p.exited:
			if p.err != nil {
				errs = append(errs, fmt.Errorf("worker %s: %w%s", p.name, p.err, p.stderr.excerpt()))
			}
		case <-grace.C:
			errs = append(errs, fmt.Errorf("worker %s did not stop in time; killed", p.name))
			c.kill()
			return errors.Join(errs...)
		}
	}
	return errors.Join(errs...)
}

// kill ends every worker still running and waits for them.
func (c *cluster) kill() {
	for _, p := range c.procs {
		_ = p.stdin.Close()
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
		}
	}
	for _, p := range c.procs {
		<-p.exited
	}
}

// logProblems returns the ERROR and WARN lines the workers logged, each
// prefixed with the worker's name.
func (c *cluster) logProblems() []string {
	var out []string
	for _, p := range c.procs {
		for _, l := range p.stderr.problems() {
			out = append(out, p.name+": "+l)
		}
	}
	return out
}

// readyWriter is a worker's standard output: it signals ch when the
// worker says it is ready and discards everything else.
type readyWriter struct {
	mu   sync.Mutex
	buf  []byte
	once sync.Once
	ch   chan struct{}
}

func newReadyWriter() *readyWriter { return &readyWriter{ch: make(chan struct{})} }

func (w *readyWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if strings.TrimSpace(string(w.buf[:i])) == workerReady {
			w.once.Do(func() { close(w.ch) })
		}
		w.buf = w.buf[i+1:]
	}
	return len(b), nil
}

// logTail keeps what a worker logs: the problem lines (ERROR and WARN, up
// to a limit) and the last few kilobytes, for error messages.
type logTail struct {
	mu      sync.Mutex
	partial []byte
	issues  []string
	dropped int
	tail    []byte
}

const (
	maxIssues = 20
	tailBytes = 4096
)

func (l *logTail) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tail = append(l.tail, b...)
	if len(l.tail) > tailBytes {
		l.tail = l.tail[len(l.tail)-tailBytes:]
	}
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		if isProblem(line) {
			if len(l.issues) < maxIssues {
				l.issues = append(l.issues, line)
			} else {
				l.dropped++
			}
		}
	}
	return len(b), nil
}

// isProblem reports a log line of level ERROR or WARN (slog's text
// format), or any line that is not a log record (a panic, say).
func isProblem(line string) bool {
	if strings.TrimSpace(line) == "" {
		return false
	}
	if !strings.Contains(line, "level=") {
		return true
	}
	return strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN")
}

func (l *logTail) problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]string(nil), l.issues...)
	if l.dropped > 0 {
		out = append(out, fmt.Sprintf("... and %d more", l.dropped))
	}
	return out
}

// excerpt is the end of the log, for an error message.
func (l *logTail) excerpt() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := strings.TrimSpace(string(l.tail))
	if t == "" {
		return ""
	}
	return "; its log ends:\n" + t
}

// SelfWorkerCommand returns a WorkerCommand that re-executes the running
// program with prefix before the worker's arguments: prefix is whatever
// makes the program call RunWorker (for the trellis command, "bench
// worker").
func SelfWorkerCommand(prefix ...string) (WorkerCommand, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to run workers: %w", err)
	}
	return func(args []string) *exec.Cmd {
		return exec.Command(exe, append(append([]string(nil), prefix...), args...)...)
	}, nil
}
