package cli

import (
	"regexp"
	"strings"
	"testing"
)

// TestExitCodes shows one command line ending in each exit code of the
// table in docs/reference/cli/README.md, on a database holding runs.
func TestExitCodes(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	const unknown = "0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b"
	exec := func(args ...string) (int, string, string) {
		code, out, errOut := e.exec(args...)
		return code, e.normalise(out), e.normalise(errOut)
	}
	transcriptOf(t, "exit-codes.txt", func(args ...string) (int, string, string) {
		// The database URL (a schema of the test's) is left out of the
		// transcript: exec adds it.
		return exec(args...)
	},
		[]string{"runs", "list", "-status", "failed"},
		[]string{"runs", "show", unknown},
		[]string{"runs", "list", "-status", "sideways"},
		[]string{"runs", "retry", "-workflow", "ops", "-status", "failed"},
		[]string{"runs", "cancel", "-workflow", "chain"},
		[]string{"runs", "purge", "-older-than", "1m"},
		[]string{"runs", "retry", "-workflow", "ops", "-status", "failed", "-yes"},
	)
	if got := e.ok("runs", "list", "-status", "failed"); !strings.Contains(got, "no runs") {
		t.Errorf("the failed run was not retried by the last command:\n%s", got)
	}
}

// TestWhereDidYouMean shows the guesses for a misspelt field and variable
// in a -where filter.
func TestWhereDidYouMean(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	version := regexp.MustCompile(`chain@[0-9a-f]+`)
	transcriptOf(t, "where-did-you-mean.txt", func(args ...string) (int, string, string) {
		code, out, errOut := e.exec(args...)
		return code, out, version.ReplaceAllString(errOut, "chain@<version>")
	},
		[]string{"runs", "list", "-workflow", "chain", "-where", "input.strat > 1"},
		[]string{"runs", "list", "-workflow", "chain", "-where", `stauts == "FAILED"`},
		[]string{"runs", "retry", "-workflow", "chain", "-where", "input.start > 1 && tenat == 'acme'"},
	)
}
