//go:build linux

package gen

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// testPostgresQuickStart follows README.md's Quick start on Postgres, from
// its marked blocks, in the module the README's Quick start
// made: on a database of its own (the database block: created on
// TRELLIS_DATABASE_URL's server and dropped at the end), it migrates, starts
// the worker in the background, runs the trigger process and compares what
// it prints, checks the shape of trellis runs list, starts the dashboard
// (on a free port: the page's 8080 may be taken) and fetches its runs page,
// then stops the dashboard and the worker with SIGTERM, as a deployment
// would, and checks that each exits cleanly (exit status 0). The
// database's connection string carries a password (which the test server,
// trusting local connections, does not check) that no output of the
// programs, nor the dashboard's page, may show.
func testPostgresQuickStart(t *testing.T, ws userWorkspace, repo string) {
	page, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const name = "README.md"
	blocks, err := quickStart(page, "## Quick start on Postgres")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(blocks) == 0 || blocks[0].kind != "database" {
		t.Fatalf("%s: the quick start on Postgres starts with a <!-- quickstart: database --> block", name)
	}
	if !strings.Contains(blocks[0].text, "export TRELLIS_DATABASE_URL=") {
		t.Fatalf("%s:%d: the database block does not export TRELLIS_DATABASE_URL, which the commands after it read", name, blocks[0].line)
	}
	// A password no output may show: the test server trusts local
	// connections, so one given where none is needed is not checked.
	const password = "pw-marker-7Qz3"
	db := pgtest.Database(t)
	if u, err := url.Parse(db); err == nil && u.User != nil && strings.Contains(db, "://") {
		if _, set := u.User.Password(); !set {
			u.User = url.UserPassword(u.User.Username(), password)
			db = u.String()
		}
	}
	env := slices.Concat(ws.env, []string{"TRELLIS_DATABASE_URL=" + db})

	started, transcript := ws.follow(t, name, blocks[1:], env)
	var dashboard, worker *background
	for _, b := range started {
		switch {
		case b.isDashboard():
			dashboard = b
		case len(b.args) >= 2 && b.args[0] == "run":
			worker = b
		}
	}
	if dashboard == nil || worker == nil {
		t.Fatalf("%s: the quick start starts no worker (go run in the background) or no dashboard (go tool trellis dashboard)", name)
	}

	served := dashboard.waitFor(t, regexp.MustCompile(`serving (http://\S+)`))
	resp, err := http.Get(served + "runs")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("greet")) {
		t.Errorf("GET %sruns: %d, %v; want 200 and the greet runs:\n%s", served, resp.StatusCode, err, body)
	}

	for i := len(started) - 1; i >= 0; i-- {
		started[i].stop(t)
	}
	for _, b := range started {
		transcript += b.out.String()
	}
	if strings.Contains(transcript+string(body), password) {
		t.Errorf("the database's password shows in the output of the quick start's programs or the dashboard:\n%s", transcript)
	}
	if !strings.Contains(worker.out.String(), "worker stopped") {
		t.Errorf("the worker exited without logging %q:\n%s", "worker stopped", worker.out.String())
	}
}

// A background is a command of a run background block, running.
type background struct {
	args []string
	cmd  *exec.Cmd
	out  *syncBuffer // its stdout and stderr
	done chan struct{}
	err  error // of cmd.Wait, once done is closed
}

// start starts go with args in the user's module, in a process group of
// its own, killed when the test ends if it still runs. The dashboard
// listens on a free port rather than the page's 8080.
func (ws userWorkspace) start(t *testing.T, env []string, args ...string) *background {
	t.Helper()
	b := &background{args: args, out: &syncBuffer{}, done: make(chan struct{})}
	if b.isDashboard() {
		args = append(args[:len(args):len(args)], "-addr", "127.0.0.1:0")
	}
	b.cmd = exec.Command(ws.goTool, args...)
	b.cmd.Dir, b.cmd.Env = ws.module, env
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		b.err = b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
			<-b.done
		}
	})
	return b
}

func (b *background) isDashboard() bool {
	return len(b.args) >= 3 && b.args[0] == "tool" && b.args[1] == "trellis" && b.args[2] == "dashboard"
}

// waitFor waits until the command's output matches re, and returns the
// first submatch; it fails the test if the command ends first, or after
// five minutes (a first build on a loaded machine), rather than hang.
func (b *background) waitFor(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if m := re.FindStringSubmatch(b.out.String()); m != nil {
			return m[1]
		}
		select {
		case <-b.done:
			t.Fatalf("go %s ended (%v) before printing %s:\n%s", strings.Join(b.args, " "), b.err, re, b.out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("go %s has not printed %s:\n%s", strings.Join(b.args, " "), re, b.out.String())
		}
	}
}

// stop sends SIGTERM to the program the go command runs (go run and go
// tool run it as their child, and exit with its status) and checks that
// it exits cleanly.
func (b *background) stop(t *testing.T) {
	t.Helper()
	target := b.cmd.Process.Pid
	if kids := children(b.cmd.Process.Pid); len(kids) == 1 {
		target = kids[0]
	}
	if err := syscall.Kill(target, syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM to go %s: %v", strings.Join(b.args, " "), err)
	}
	select {
	case <-b.done:
	case <-time.After(2 * time.Minute):
		t.Errorf("go %s has not exited two minutes after SIGTERM:\n%s", strings.Join(b.args, " "), b.out.String())
		return
	}
	if b.err != nil {
		t.Errorf("go %s did not exit cleanly after SIGTERM: %v\n%s", strings.Join(b.args, " "), b.err, b.out.String())
	}
}

// children returns the processes whose parent is pid, from /proc.
func children(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) >= 2 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, child)
		}
	}
	return kids
}

// syncBuffer is a bytes.Buffer safe for a process's output and a reader.
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
