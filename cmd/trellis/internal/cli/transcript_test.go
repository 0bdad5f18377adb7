package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/termtext"
)

// transcript runs each command line through Main in dir and compares what
// a user would see, the command, its exit code, its stdout and its
// stderr, with testdata/cli/name; go test -update rewrites the file.
// env sets environment variables for every command line.
func transcript(t *testing.T, name, dir string, env map[string]string, lines ...[]string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	transcriptOf(t, name, func(args ...string) (int, string, string) { return run(t, dir, args...) }, lines...)
}

// transcriptOf is transcript with the commands run by exec.
func transcriptOf(t *testing.T, name string, exec func(args ...string) (int, string, string), lines ...[]string) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "cli", name)) // run changes directory
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, args := range lines {
		if i > 0 {
			b.WriteString("\n")
		}
		code, stdout, stderr := exec(args...)
		fmt.Fprintf(&b, "$ trellis %s\nexit %d\n", shellWords(args), code)
		section(&b, "stdout", stdout)
		section(&b, "stderr", stderr)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// section writes one stream of a transcript, each line indented, or
// nothing when it is empty.
func section(b *strings.Builder, name, text string) {
	if text == "" {
		return
	}
	// The escapes the CLI writes show as ␛: an escaped ESC from a user's
	// text shows as \x1b.
	text = strings.ReplaceAll(text, "\x1b", "␛")
	fmt.Fprintf(b, "%s:\n", name)
	for _, l := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
		b.WriteString("  | " + l)
	}
	b.WriteString("\n")
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("  (no newline at the end)\n")
	}
}

// shellWords quotes the arguments that need it, as a shell would take
// them; control characters are shown escaped.
func shellWords(args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		a = termtext.Line(a)
		if a == "" || strings.ContainsAny(a, " '\"$&|;<>*?\\{}") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		words[i] = a
	}
	return strings.Join(words, " ")
}
