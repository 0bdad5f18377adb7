package cli

import (
	"strings"
	"testing"
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

func TestRedactPassword(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://ada:pw@h/db":                 "postgres://ada:xxxxx@h/db",
		"postgres://ada@h/db":                    "postgres://ada@h/db",
		"postgresql://h/db?password=pw&user=ada": "postgresql://h/db?password=xxxxx&user=ada",
		"host=h password=pw user=ada":            "host=h password=xxxxx user=ada",
		"host=h password = 'p w\\' x' user=ada":  "host=h password = xxxxx user=ada",
		"host=h user=ada":                        "host=h user=ada",
		"":                                       "",
	} {
		if got := redactPassword(in); got != want {
			t.Errorf("redactPassword(%q) = %q, want %q", in, got, want)
		}
	}
}
