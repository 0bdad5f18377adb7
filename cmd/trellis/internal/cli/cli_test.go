package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const validWorkflow = `name: greet
input:
  type: object
  required: [name]
  properties:
    name: {type: string}
steps:
  - name: hello
    output: {type: object, properties: {message: {type: string}}}
  - name: shout
    parents: [hello]
`

// brokenWorkflow has two problems: an unknown key and a cycle.
const brokenWorkflow = `name: broken
input: {type: object}
steps:
  - name: a
    parents: [b]
    colour: red
  - name: b
    parents: [a]
`

// run executes a command line in dir and returns its exit code and
// output.
func run(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Chdir(dir)
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLintExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"clean file", []string{"lint", "flows/greet.yaml"}, ExitOK},
		{"clean directory", []string{"lint", "flows"}, ExitOK},
		{"no paths means the current directory", []string{"lint"}, ExitProblems},
		{"problems", []string{"lint", "broken/broken.yaml"}, ExitProblems},
		{"unknown flag", []string{"lint", "-strict", "flows"}, ExitUsage},
		{"unknown format", []string{"lint", "-format", "xml", "flows"}, ExitUsage},
		{"missing path", []string{"lint", "nowhere.yaml"}, ExitUsage},
		{"help", []string{"lint", "-h"}, ExitOK},
		{"unknown command", []string{"frobnicate"}, ExitUsage},
		{"no command", nil, ExitUsage},
	}
	dir := workspace(t, map[string]string{
		"flows/greet.yaml":   validWorkflow,
		"flows/ci.yaml":      "jobs: {build: {runs-on: linux}}\n",
		"broken/broken.yaml": brokenWorkflow,
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, dir, tt.args...)
			if code != tt.code {
				t.Errorf("trellis %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.code, stdout, stderr)
			}
		})
	}
}

func TestLintFormats(t *testing.T) {
	dir := workspace(t, map[string]string{"broken.yaml": brokenWorkflow, "clean.yaml": validWorkflow})
	tests := []struct {
		format string
		want   string
	}{
		{"text", "broken.yaml:5:15: steps form a cycle: a -> b -> a; a step cannot wait for itself, remove one of these parent links\n" +
			"broken.yaml:6:5: unknown key \"colour\" in step \"a\" (allowed: name, parents, skipIf, sleep, retry, timeout, output, concurrency, rateLimit, forEach, workflow, waitFor, runsOn)\n"},
		{"github", "::error file=broken.yaml,line=5,col=15::steps form a cycle: a -> b -> a; a step cannot wait for itself, remove one of these parent links\n" +
			"::error file=broken.yaml,line=6,col=5::unknown key \"colour\" in step \"a\" (allowed: name, parents, skipIf, sleep, retry, timeout, output, concurrency, rateLimit, forEach, workflow, waitFor, runsOn)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			code, stdout, _ := run(t, dir, "lint", "-format", tt.format, "broken.yaml", "clean.yaml")
			if code != ExitProblems {
				t.Errorf("exit code %d, want %d", code, ExitProblems)
			}
			if diff := cmp.Diff(tt.want, stdout); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		_, stdout, _ := run(t, dir, "lint", "-format", "json", "broken.yaml")
		var got []jsonProblem
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("output is not a JSON array of problems: %v\n%s", err, stdout)
		}
		want := []jsonProblem{
			{File: "broken.yaml", Line: 5, Column: 15, Message: "steps form a cycle: a -> b -> a; a step cannot wait for itself, remove one of these parent links"},
			{File: "broken.yaml", Line: 6, Column: 5, Message: `unknown key "colour" in step "a" (allowed: name, parents, skipIf, sleep, retry, timeout, output, concurrency, rateLimit, forEach, workflow, waitFor, runsOn)`},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("problems (-want +got):\n%s", diff)
		}
	})
	t.Run("json when clean", func(t *testing.T) {
		code, stdout, _ := run(t, dir, "lint", "-format", "json", "clean.yaml")
		if code != ExitOK || strings.TrimSpace(stdout) != "[]" {
			t.Errorf("exit %d, output %q; want 0 and []", code, stdout)
		}
	})
}

func TestGitHubEscaping(t *testing.T) {
	if got, want := escapeData("50% done\r\nnext"), "50%25 done%0D%0Anext"; got != want {
		t.Errorf("escapeData = %q, want %q", got, want)
	}
	if got, want := escapeProperty("a:b,c%.yaml"), "a%3Ab%2Cc%25.yaml"; got != want {
		t.Errorf("escapeProperty = %q, want %q", got, want)
	}
}

func TestGenerateWritesBesideTheWorkflow(t *testing.T) {
	dir := workspace(t, map[string]string{
		"flows/greet.yaml": validWorkflow,
		"flows/doc.go":     "// Package greeting is hand-written.\npackage greeting\n",
	})
	code, stdout, stderr := run(t, dir, "generate", "flows/greet.yaml")
	if code != ExitOK || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and no output", code, stdout, stderr)
	}
	first, err := os.ReadFile(filepath.Join(dir, "flows", "greet.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// Code generated by trellis generate (generated code v5). DO NOT EDIT.\n// Source: greet.yaml\n\npackage greeting\n",
		"type GreetSteps interface",
		"func RegisterGreet(",
	} {
		if !strings.Contains(string(first), want) {
			t.Errorf("greet.gen.go lacks %q", want)
		}
	}

	// Twice gives the same bytes.
	if code, _, stderr := run(t, dir, "generate", "flows"); code != ExitOK {
		t.Fatalf("second run exited %d: %s", code, stderr)
	}
	second, err := os.ReadFile(filepath.Join(dir, "flows", "greet.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Error("generating twice gave different bytes")
	}
}

func TestGeneratePackageFlag(t *testing.T) {
	dir := workspace(t, map[string]string{"greet.yaml": validWorkflow})
	if code, _, stderr := run(t, dir, "generate", "-package", "flows", "greet.yaml"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	src, err := os.ReadFile(filepath.Join(dir, "greet.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "\npackage flows\n") {
		t.Errorf("greet.gen.go is not in package flows:\n%s", src[:200])
	}
	if code, _, _ := run(t, dir, "generate", "-package", "not-a-name", "greet.yaml"); code != ExitUsage {
		t.Errorf("an invalid -package exited %d, want %d", code, ExitUsage)
	}
}

// TestGenerateRefusesOnProblems checks that one broken file stops every
// file from being written, and that the problems are shown.
func TestGenerateRefusesOnProblems(t *testing.T) {
	dir := workspace(t, map[string]string{"greet.yaml": validWorkflow, "broken.yaml": brokenWorkflow})
	code, stdout, stderr := run(t, dir, "generate", ".")
	if code != ExitProblems {
		t.Errorf("exit %d, want %d", code, ExitProblems)
	}
	if stdout != "" || !strings.Contains(stderr, "broken.yaml:5:15: steps form a cycle") || !strings.Contains(stderr, "no file was written") {
		t.Errorf("stdout %q, stderr %q; want the problems on stderr", stdout, stderr)
	}
	for _, name := range []string{"greet.gen.go", "broken.gen.go"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s was written (stat: %v); generate must write nothing when a file has problems", name, err)
		}
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	code, stdout, _ := run(t, t.TempDir(), "help")
	if code != ExitOK {
		t.Errorf("help exited %d", code)
	}
	for _, c := range Commands() {
		if !strings.Contains(stdout, c.Name()+" ") || !strings.Contains(stdout, c.Summary()) {
			t.Errorf("help does not list %s", c.Name())
		}
	}
}

// TestGenerateWritesNoSymlink checks that generate does not write through
// a symlink in place of its output, which could lead anywhere.
func TestGenerateWritesNoSymlink(t *testing.T) {
	dir := workspace(t, map[string]string{"flows/greet.yaml": validWorkflow, "elsewhere/target.txt": "precious\n"})
	if err := os.Symlink("../elsewhere/target.txt", filepath.Join(dir, "flows", "greet.gen.go")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, dir, "generate", "flows/greet.yaml")
	if code != ExitProblems || !strings.Contains(stderr, "flows/greet.gen.go is not a regular file") {
		t.Errorf("exit %d, stderr %q; want 1 and the output refused", code, stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "elsewhere", "target.txt")); string(got) != "precious\n" {
		t.Errorf("the symlink's target was overwritten: %q", got)
	}
}
