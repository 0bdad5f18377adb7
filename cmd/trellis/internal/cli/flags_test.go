package cli

import (
	"testing"
)

// TestFlagsAnywhere runs every command and subcommand with its flags
// after its positional arguments and subcommand (and, for those with
// subcommands, before), as -flag value and -flag=value. Each case ends
// in a message that only the flag's value explains, which shows that the
// flag was read. No database is needed: every case stops before
// connecting.
func TestFlagsAnywhere(t *testing.T) {
	dir := workspace(t, map[string]string{
		"flows/greet.yaml":   validWorkflow,
		"broken/broken.yaml": brokenWorkflow,
	})
	const id = "0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b"
	db := "postgres://nobody@127.0.0.1:1/none"
	transcript(t, "flags-anywhere.txt", dir, map[string]string{"TRELLIS_DATABASE_URL": ""},
		[]string{"lint", "flows", "-format", "json"},
		[]string{"lint", "broken", "-format=github"},
		[]string{"generate", "flows", "-package", "not-a-name"},
		[]string{"graph", "flows/greet.yaml", "-format", "dot"},
		[]string{"migrate", "status", "-database-url", db + "?sslmode=sideways"},
		[]string{"migrate", "sideways", "-database-url", db},
		[]string{"runs", "list", "-database-url", db, "-tenant", "acme", "-since", "yesterday"},
		[]string{"runs", "-database-url", db, "list", "-since=yesterday"},
		[]string{"runs", "show", id, "-format", "xml", "-database-url", db},
		[]string{"runs", "show", "-database-url", db, "--", "-format"},
		[]string{"runs", "list", "-tenant", "--", "-since", "yesterday", "-database-url", db}, // "--" as a value ends nothing
		[]string{"runs", "show", id, "-json", "-graph", "dot", "-database-url", db},
		[]string{"runs", "events", id, "-database-url", db, "-format", "xml"},
		[]string{"runs", "cancel", "-dry-run", "not-an-id", "-database-url", db},
		[]string{"runs", "retry", "-database-url", db, "-yes", id, "-where", "input.x > 1"},
		[]string{"runs", "purge", "-database-url", db, "-older-than", "forever", "-yes"},
		[]string{"workers", "-database-url", db, "-stale-after", "1s"},
		[]string{"queue", "-database-url", db, "-format", "xml"},
		[]string{"workflows", "-format=xml", "-database-url", db},
		[]string{"schedules", "list", "-database-url", db, "-format", "xml"},
		[]string{"schedules", "-database-url", db, "pause", "orders", "-format", "xml", "nightly"},
		[]string{"events", "send", "orders", "signed", "not-json", "-run", id, "-database-url", db},
		[]string{"dashboard", "-database-url", db, "-addr", "0.0.0.0:8080"},
		[]string{"dashboard", "hash-password", "ada", "-role", "admin"},
		[]string{"dashboard", "hash-pasword", "ada"},
		[]string{"bench", "-quick", "-scenarios", "nonesuch"},
	)
}

// TestDidYouMean shows the guesses for a misspelt command, subcommand and
// flag.
func TestDidYouMean(t *testing.T) {
	transcript(t, "did-you-mean.txt", t.TempDir(), nil,
		[]string{"rnus"},
		[]string{"runs", "lsit"},
		[]string{"schedules", "puase", "orders", "nightly"},
		[]string{"events", "sned"},
		[]string{"migrate", "status", "-databse-url", "postgres://x"},
		[]string{"runs", "list", "-stauts", "FAILED"},
		[]string{"lint", "-formt", "json"},
		[]string{"frobnicate"},
	)
}

// TestFlagsBeforeTheCommand checks that flags may precede the command
// and its subcommand, and that a command line with no command says so.
func TestFlagsBeforeTheCommand(t *testing.T) {
	transcript(t, "flags-before-the-command.txt", t.TempDir(), map[string]string{"TRELLIS_DATABASE_URL": ""},
		[]string{"-database-url", "postgres://nobody@127.0.0.1:1/none", "-format", "xml", "runs", "list"},
		[]string{"-color", "never", "-format=xml", "workers", "-database-url", "postgres://nobody@127.0.0.1:1/none"},
		[]string{"-color", "never"},
	)
}
