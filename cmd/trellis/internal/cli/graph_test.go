package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGraphExitCodes(t *testing.T) {
	dir := workspace(t, map[string]string{
		"flows/greet.yaml":   validWorkflow,
		"broken/broken.yaml": brokenWorkflow,
	})
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"mermaid by default", []string{"graph", "flows/greet.yaml"}, ExitOK},
		{"dot", []string{"graph", "-format", "dot", "flows/greet.yaml"}, ExitOK},
		{"problems", []string{"graph", "broken/broken.yaml"}, ExitProblems},
		{"unknown format", []string{"graph", "-format", "svg", "flows/greet.yaml"}, ExitUsage},
		{"unknown flag", []string{"graph", "-strict", "flows/greet.yaml"}, ExitUsage},
		{"no file", []string{"graph"}, ExitUsage},
		{"two files", []string{"graph", "flows/greet.yaml", "broken/broken.yaml"}, ExitUsage},
		{"missing file", []string{"graph", "nowhere.yaml"}, ExitUsage},
		{"a directory", []string{"graph", "flows"}, ExitUsage},
		{"help", []string{"graph", "-h"}, ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, dir, tt.args...)
			if code != tt.code {
				t.Errorf("trellis %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.code, stdout, stderr)
			}
			if code == ExitUsage && stdout != "" {
				t.Errorf("a usage error printed on stdout: %q", stdout)
			}
		})
	}
}

func TestGraphFormats(t *testing.T) {
	dir := workspace(t, map[string]string{"greet.yaml": validWorkflow})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"graph", "greet.yaml"}, "flowchart TD\n" +
			"    step_hello[\"hello\"]\n" +
			"    step_shout[\"shout\"]\n" +
			"    step_hello --> step_shout\n"},
		{[]string{"graph", "-format", "mermaid", "greet.yaml"}, "flowchart TD\n"},
		{[]string{"graph", "-format", "dot", "greet.yaml"}, "digraph \"greet\" {\n"},
	}
	for _, tt := range tests {
		code, stdout, stderr := run(t, dir, tt.args...)
		if code != ExitOK || stderr != "" {
			t.Fatalf("trellis %s: exit %d, stderr %q", strings.Join(tt.args, " "), code, stderr)
		}
		if !strings.HasPrefix(stdout, tt.want) {
			t.Errorf("trellis %s printed\n%s\nwant it to start with\n%s", strings.Join(tt.args, " "), stdout, tt.want)
		}
	}
}

// TestGraphOutputFile checks that -o writes what stdout would have shown,
// and nothing to stdout.
func TestGraphOutputFile(t *testing.T) {
	dir := workspace(t, map[string]string{"greet.yaml": validWorkflow})
	_, want, _ := run(t, dir, "graph", "-format", "dot", "greet.yaml")
	code, _, stderr := run(t, dir, "graph", "-format", "dot", "-o", "out/greet.dot", "greet.yaml")
	if code != ExitProblems || !strings.Contains(stderr, "out/greet.dot") {
		t.Errorf("-o into a missing directory: exit %d, stderr %q; want 1 and an error naming the file", code, stderr)
	}
	code, stdout, stderr := run(t, dir, "graph", "-format", "dot", "-o", "greet.dot", "greet.yaml")
	if code != ExitOK || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and no output", code, stdout, stderr)
	}
	got, err := os.ReadFile(filepath.Join(dir, "greet.dot"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("greet.dot holds\n%s\nwant what stdout shows\n%s", got, want)
	}
}

// TestGraphProblems checks that a file with problems is reported as lint
// reports it, on stderr, and that nothing is drawn.
func TestGraphProblems(t *testing.T) {
	dir := workspace(t, map[string]string{"broken.yaml": brokenWorkflow})
	code, stdout, stderr := run(t, dir, "graph", "-o", "broken.mmd", "broken.yaml")
	if code != ExitProblems {
		t.Errorf("exit %d, want %d", code, ExitProblems)
	}
	want := "broken.yaml:5:15: steps form a cycle: a -> b -> a; a step cannot wait for itself, remove one of these parent links\n" +
		"broken.yaml:6:5: unknown key \"colour\" in step \"a\" (allowed: name, parents, skipIf, sleep, retry, timeout, output, concurrency, rateLimit, forEach, workflow, waitFor, runsOn)\n" +
		"trellis graph: 2 problem(s); no graph was drawn\n"
	if stdout != "" || stderr != want {
		t.Errorf("stdout %q, stderr\n%s\nwant no stdout and stderr\n%s", stdout, stderr, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "broken.mmd")); !os.IsNotExist(err) {
		t.Errorf("broken.mmd was written (stat: %v)", err)
	}
}

func TestGenerateGraph(t *testing.T) {
	for _, tt := range []struct{ format, file, start string }{
		{"mermaid", "greet.mmd", "flowchart TD\n"},
		{"dot", "greet.dot", "digraph \"greet\" {\n"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			dir := workspace(t, map[string]string{"flows/greet.yaml": validWorkflow})
			code, stdout, stderr := run(t, dir, "generate", "-graph", tt.format, "flows")
			if code != ExitOK || stdout != "" || stderr != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and no output", code, stdout, stderr)
			}
			got, err := os.ReadFile(filepath.Join(dir, "flows", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			_, want, _ := run(t, dir, "graph", "-format", tt.format, "flows/greet.yaml")
			if !strings.HasPrefix(string(got), tt.start) || string(got) != want {
				t.Errorf("%s holds\n%s\nwant what trellis graph prints\n%s", tt.file, got, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "flows", "greet.gen.go")); err != nil {
				t.Errorf("the code was not written: %v", err)
			}
		})
	}
}

func TestGenerateGraphOffAndRefused(t *testing.T) {
	dir := workspace(t, map[string]string{"greet.yaml": validWorkflow})
	if code, _, stderr := run(t, dir, "generate", "greet.yaml"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, name := range []string{"greet.mmd", "greet.dot"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("generate without -graph wrote %s (stat: %v)", name, err)
		}
	}
	if code, _, stderr := run(t, dir, "generate", "-graph", "svg", "greet.yaml"); code != ExitUsage || !strings.Contains(stderr, "use mermaid or dot") {
		t.Errorf("-graph svg: exit %d, stderr %q; want %d and the formats", code, stderr, ExitUsage)
	}

	// One broken file: no code and no graph for any file.
	dir = workspace(t, map[string]string{"greet.yaml": validWorkflow, "broken.yaml": brokenWorkflow})
	if code, _, _ := run(t, dir, "generate", "-graph", "mermaid", "."); code != ExitProblems {
		t.Errorf("exit %d, want %d", code, ExitProblems)
	}
	for _, name := range []string{"greet.gen.go", "greet.mmd", "broken.mmd"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s was written (stat: %v); generate must write nothing when a file has problems", name, err)
		}
	}
}
