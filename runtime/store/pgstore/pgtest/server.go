package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a throwaway PostgreSQL cluster of a test's own: made with
// initdb in a temporary directory, listening on a free port of 127.0.0.1,
// and removed when the test ends. Tests that stop, restart or crash
// Postgres use one, so that they never disturb other tests or the
// machine's server.
//
// The server binaries come from TRELLIS_PG_BINDIR, or the newest
// /usr/lib/postgresql/*/bin (Debian's layout). Without them the test is
// skipped, unless TRELLIS_REQUIRE_DB=1. Run as root, the cluster runs as
// the postgres user, since Postgres refuses to run as root.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	as   []string // command prefix that runs as the cluster's owner
}

// NewServer initialises and starts a throwaway cluster.
func NewServer(t testing.TB) *Server {
	t.Helper()
	bin, err := serverBinaries()
	if err != nil {
		if Required() {
			t.Fatalf("pgtest: a throwaway Postgres cluster is required (TRELLIS_REQUIRE_DB=1): %v", err)
		}
		t.Skipf("pgtest: %v", err)
	}
	dir, err := os.MkdirTemp("", "trellis-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: dir}
	t.Cleanup(func() {
		_ = s.pgctl("stop", "-m", "immediate")
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		owner, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("pgtest: running as root, the cluster needs a postgres user to run as: %v", err)
		}
		uid, _ := strconv.Atoi(owner.Uid)
		gid, _ := strconv.Atoi(owner.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.as = []string{"runuser", "-u", "postgres", "--"}
	}
	if s.port, err = freePort(); err != nil {
		t.Fatal(err)
	}
	if out, err := s.command(filepath.Join(bin, "initdb"), "-D", s.data(), "-U", "postgres", "--auth=trust",
		"--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	s.Start()
	return s
}

// serverBinaries finds the directory of initdb and pg_ctl.
func serverBinaries() (string, error) {
	if dir := os.Getenv("TRELLIS_PG_BINDIR"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (initdb, pg_ctl) in /usr/lib/postgresql/*/bin; install postgresql or set TRELLIS_PG_BINDIR")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) command(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, s.as...), name), args...)
	return exec.Command(argv[0], argv[1:]...)
}

func (s *Server) pgctl(args ...string) error {
	args = append([]string{"-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-w"}, args...)
	out, err := s.command(filepath.Join(s.bin, "pg_ctl"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %v: %w\n%s", args, err, bytes.TrimSpace(out))
	}
	return nil
}

// URL is a connection string for the cluster's postgres database.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Start starts the stopped cluster and waits until it accepts
// connections. fsync is off: the tests crash Postgres, not the machine.
func (s *Server) Start() {
	s.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300", s.port, s.dir)
	if err := s.pgctl("start", "-o", opts); err != nil {
		s.t.Fatalf("pgtest: %v\nserver log:\n%s", err, s.Log())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.URL())
		if err == nil {
			conn.Close(ctx)
			return
		}
		if ctx.Err() != nil {
			s.t.Fatalf("pgtest: the cluster does not accept connections: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the cluster: mode "fast" (what a restart by an operator does:
// sessions are terminated, 57P01) or "immediate" (a crash: no shutdown
// checkpoint, recovery at the next start).
func (s *Server) Stop(mode string) {
	s.t.Helper()
	if err := s.pgctl("stop", "-m", mode); err != nil {
		s.t.Fatalf("pgtest: %v", err)
	}
}

// Log returns the server's log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	return string(b)
}
