package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestColour shows lint's output and problems with colour forced on, off
// and left to decide (off: the tests' output is not a terminal), and
// that a file's hostile text stays escaped among the CLI's escapes.
func TestColour(t *testing.T) {
	dir := workspace(t, map[string]string{
		"flows/greet.yaml":   validWorkflow,
		"broken/broken.yaml": brokenWorkflow,
		// YAML's escapes: the file holds no control character, its key does.
		"evil/evil.yaml": "name: evil\ninput: {type: object}\nsteps:\n  - name: a\n    \"\\e[2J\\e[32mcolour\": red\n",
	})
	transcript(t, "colour.txt", dir, map[string]string{"NO_COLOR": "", "TERM": "xterm-256color"},
		[]string{"lint", "-color", "always", "flows"},
		[]string{"lint", "-color", "always", "broken"},
		[]string{"lint", "broken", "-color=never"},
		[]string{"lint", "broken"},
		[]string{"-color", "always", "lint", "evil"},
		[]string{"generate", "-color", "always", "broken"},
		[]string{"lint", "-color", "sometimes", "flows"},
	)
}

// TestNoColor checks that NO_COLOR does not override -color always (as
// no-color.org asks of explicit options).
func TestNoColor(t *testing.T) {
	dir := workspace(t, map[string]string{"flows/greet.yaml": validWorkflow})
	t.Setenv("NO_COLOR", "1")
	if _, out, _ := run(t, dir, "lint", "-color", "always", "flows"); !strings.Contains(out, "\x1b[32mok\x1b[0m") {
		t.Errorf("lint -color always with NO_COLOR set = %q, want colour", out)
	}
}

// TestColourWanted checks when the environment lets a terminal have
// colour.
func TestColourWanted(t *testing.T) {
	for _, tt := range []struct {
		noColor, term string
		want          bool
	}{
		{"", "xterm-256color", true},
		{"", "", true},
		{"1", "xterm-256color", false},
		{"0", "xterm", false}, // any value that is not empty
		{"", "dumb", false},
	} {
		env := map[string]string{"NO_COLOR": tt.noColor, "TERM": tt.term}
		if got := colourWanted(func(k string) string { return env[k] }); got != tt.want {
			t.Errorf("NO_COLOR=%q TERM=%q: colourWanted = %v, want %v", tt.noColor, tt.term, got, tt.want)
		}
	}
}

// TestColourRuns shows a run and a dry run's selection in colour, through
// Main (only its output takes colour).
func TestColourRuns(t *testing.T) {
	e := newOpsEnv(t)
	e.populate()
	t.Setenv("TRELLIS_DATABASE_URL", e.url)
	failed := "00000000-0000-7000-8000-000000000002" // as normalise shows it
	transcriptOf(t, "colour-runs.txt", func(args ...string) (int, string, string) {
		args = slices.Clone(args)
		if i := slices.Index(args, failed); i >= 0 {
			args[i] = e.runs[runOpsFailed].String()
		}
		code, out, errOut := e.main(args...)
		return code, e.normalise(out), e.normalise(errOut)
	},
		[]string{"-color", "always", "runs", "show", failed},
		[]string{"runs", "retry", "-workflow", "ops", "-dry-run", "-color", "always"},
		[]string{"runs", "retry", "-workflow", "ops", "-dry-run"},
	)
}
