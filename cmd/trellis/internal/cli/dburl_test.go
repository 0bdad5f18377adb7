package cli

import (
	"net/url"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// TestHelpHidesThePassword: help shows -database-url's default, taken
// from $TRELLIS_DATABASE_URL, with its password hidden, in both forms of
// connection string, for every command that takes the flag.
func TestHelpHidesThePassword(t *testing.T) {
	for _, env := range []string{
		"postgres://ada:s3cr3t-pw@db.example.com:5432/prod?sslmode=require",
		"host=db.example.com user=ada password=s3cr3t-pw dbname=prod",
		"host=db.example.com user=ada password='s3cr3t pw' dbname=prod",
	} {
		t.Setenv("TRELLIS_DATABASE_URL", env)
		for _, args := range [][]string{
			{"migrate", "-h"}, {"runs", "list", "-h"}, {"workers", "-h"}, {"queue", "-h"},
			{"schedules", "list", "-h"}, {"events", "send", "-h"}, {"dashboard", "-h"}, {"bench", "-h"},
		} {
			_, stdout, stderr := run(t, t.TempDir(), args...)
			out := stdout + stderr
			if strings.Contains(out, "s3cr3t") {
				t.Errorf("trellis %s with %s prints the password:\n%s", strings.Join(args, " "), env, out)
			}
			if !strings.Contains(out, "-database-url") || !strings.Contains(out, "db.example.com") {
				t.Errorf("trellis %s with %s does not show the default's host:\n%s", strings.Join(args, " "), env, out)
			}
		}
	}
}

// TestCommandsHideThePassword runs every command that connects with a
// connection string whose password is a marker, against a port that
// refuses, a database that does not exist on the test server, and
// settings that do not parse: the marker appears in no output, error or
// log line.
func TestCommandsHideThePassword(t *testing.T) {
	const marker = "Pw-marker-93kq"
	wrongDatabase, err := url.Parse(pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	wrongDatabase.User = url.UserPassword(wrongDatabase.User.Username(), marker)
	wrongDatabase.Path = "/trellis_no_such_database"
	for _, conn := range []string{
		"postgres://ada:" + marker + "@127.0.0.1:1/db?sslmode=disable",
		"postgres://ada@127.0.0.1:1/db?sslmode=disable&password=" + marker,
		"host=127.0.0.1 port=1 user=ada password = '" + marker + "' sslmode=disable",
		"host=127.0.0.1 port=1 user=ada password = '" + marker + "' sslmode=bogus",
		wrongDatabase.String(),
	} {
		for _, args := range [][]string{
			{"migrate", "up"}, {"migrate", "status"}, {"runs", "list"}, {"workers"}, {"queue"}, {"workflows"},
			{"schedules", "list"}, {"dashboard", "-addr", "127.0.0.1:0"}, {"bench", "-runs", "1"},
		} {
			t.Setenv("TRELLIS_DATABASE_URL", conn)
			code, stdout, stderr := run(t, t.TempDir(), args...)
			if code == ExitOK {
				t.Errorf("trellis %s on %s succeeded", strings.Join(args, " "), pgstore.Redact(conn))
			}
			if out := stdout + stderr; strings.Contains(out, marker) {
				t.Errorf("trellis %s on %s prints the password:\n%s", strings.Join(args, " "), pgstore.Redact(conn), out)
			}
		}
	}
}
