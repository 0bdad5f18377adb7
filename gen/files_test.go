package gen

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const childWorkflow = "name: child\ninput: {type: object}\nsteps:\n  - name: work\n"

// parentOf is a workflow whose one step starts workflow child, from file
// when file is not empty, else found by name beside it.
func parentOf(file string) string {
	ref := "{name: child}"
	if file != "" {
		ref = "{name: child, file: " + file + "}"
	}
	return "name: parent\ninput: {type: object}\nsteps:\n  - name: start\n    workflow: " + ref + "\n"
}

// lintOne lints the files at paths and returns the problems as lint
// prints them, with base names.
func lintOne(t *testing.T, paths ...string) string {
	t.Helper()
	problems, err := newGenerator(t).Lint(paths)
	if err != nil {
		t.Fatal(err)
	}
	return renderProblems(problems)
}

func TestChildFileTooLarge(t *testing.T) {
	big := childWorkflow + "# " + strings.Repeat("x", MaxFileSize) + "\n"
	dir := writeFiles(t, map[string]string{
		"go.mod":           "module example.com/m\n",
		"flows/parent.yml": parentOf("big.yaml"),
		"flows/big.yaml":   big,
	})
	parent, bigPath := filepath.Join(dir, "flows", "parent.yml"), filepath.Join(dir, "flows", "big.yaml")
	want := `parent.yml:5:35: step "start": workflow child: file big.yaml is larger than 4 MiB, the most a workflow file may hold` + "\n"
	if got := lintOne(t, parent); got != want {
		t.Errorf("a child over the limit:\n%s\nwant\n%s", got, want)
	}
	// Named on the command line, or found in a directory, it is reported
	// on its own.
	want = "big.yaml:1:1: the file is larger than 4 MiB, the most a workflow file may hold\n"
	if got := lintOne(t, bigPath); got != want {
		t.Errorf("a file over the limit:\n%s\nwant\n%s", got, want)
	}
	found, err := Find([]string{dir})
	if err != nil || len(found) != 2 {
		t.Fatalf("Find = %v, %v; want both files (the large one starts like a workflow)", found, err)
	}
	// Found by name, it is not read: no file declares the child.
	if err := os.WriteFile(parent, []byte(parentOf("")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lintOne(t, parent); !strings.Contains(got, `no workflow file in `) {
		t.Errorf("a child over the limit, found by name:\n%s", got)
	}
	// Just under the limit is fine.
	if err := os.WriteFile(bigPath, []byte(big[:MaxFileSize-1]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lintOne(t, parent, bigPath); got != "" {
		t.Errorf("a child of %d bytes: %s", MaxFileSize, got)
	}
	if _, err := ReadFile(bigPath); err != nil {
		t.Error(err)
	}
}

func TestChildFileNotRegular(t *testing.T) {
	dir := writeFiles(t, map[string]string{"go.mod": "module example.com/m\n", "parent.yaml": parentOf("pipe.yaml")})
	// A pipe no one writes to: opening it would wait for ever.
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o644); err != nil {
		t.Skipf("cannot make a pipe: %v", err)
	}
	want := `parent.yaml:5:35: step "start": workflow child: file pipe.yaml is not a regular file` + "\n"
	if got := lintOne(t, filepath.Join(dir, "parent.yaml")); got != want {
		t.Errorf("a pipe as the child:\n%s\nwant\n%s", got, want)
	}
	if got, want := lintOne(t, filepath.Join(dir, "pipe.yaml")), "pipe.yaml:1:1: the file is not a regular file\n"; got != want {
		t.Errorf("a pipe named on the command line:\n%s\nwant\n%s", got, want)
	}
	found, err := Find([]string{dir})
	if err != nil || len(found) != 1 || filepath.Base(found[0]) != "parent.yaml" {
		t.Errorf("Find = %v, %v; want parent.yaml only, the pipe skipped", found, err)
	}
	if _, err := ReadFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadFile(/dev/zero) = %v, want not a regular file", err)
	}
}

// TestChildFileInsideTheModule checks where a child's file may be: inside
// the directory of go.mod, even through symlinks; and, without a go.mod,
// in the parent's own directory (or below).
func TestChildFileInsideTheModule(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"mod/go.mod":             "module example.com/m\n",
		"mod/flows/parent.yaml":  parentOf("../shared/child.yaml"),
		"mod/shared/child.yaml":  childWorkflow,
		"outside/child.yaml":     childWorkflow,
		"loose/flows/parent.yml": parentOf("../child.yaml"),
		"loose/child.yaml":       childWorkflow,
		"loose/flows/sub/c.yaml": childWorkflow,
	})
	parent := filepath.Join(dir, "mod", "flows", "parent.yaml")
	if got := lintOne(t, parent); got != "" {
		t.Errorf("a child elsewhere in the module: %s", got)
	}

	// A symlink inside the module to a file inside it is followed.
	link := filepath.Join(dir, "mod", "flows", "child.link")
	if err := os.Symlink("../shared/child.yaml", link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(parent, []byte(parentOf("child.link")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lintOne(t, parent); got != "" {
		t.Errorf("a symlink to a child in the module: %s", got)
	}

	// Out by .., by a symlink, or by a symlinked directory: refused.
	const outside = `step "start": workflow child: file %s is %soutside the module (the directory of go.mod, ..); a child's file must be inside it`
	if err := os.Symlink(filepath.Join(dir, "outside"), filepath.Join(dir, "mod", "flows", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside/child.yaml", filepath.Join(dir, "mod", "flows", "out.yaml")); err != nil {
		t.Fatal(err)
	}
	for file, how := range map[string]string{
		"../../outside/child.yaml": "",
		"out/child.yaml":           "a symlink that leads ",
		"out.yaml":                 "a symlink that leads ",
	} {
		if err := os.WriteFile(parent, []byte(parentOf(file)), 0o644); err != nil {
			t.Fatal(err)
		}
		want := "parent.yaml:5:35: " + strings.Replace(strings.Replace(outside, "%s", file, 1), "%s", how, 1) + "\n"
		if got := lintOne(t, parent); got != want {
			t.Errorf("file: %s\n%s\nwant\n%s", file, got, want)
		}
	}
	// A sibling found by name that leads out is not read: out.yaml,
	// declaring child, is not found.
	if err := os.WriteFile(parent, []byte(parentOf("")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lintOne(t, parent); !strings.Contains(got, `no workflow file in `) {
		t.Errorf("a child found by name through a symlink out of the module:\n%s", got)
	}

	// Without a go.mod the module is the parent's directory.
	loose := filepath.Join(dir, "loose", "flows", "parent.yml")
	want := `parent.yml:5:35: step "start": workflow child: file ../child.yaml is outside the module (this file's directory, as no go.mod is above it); a child's file must be inside it` + "\n"
	if got := lintOne(t, loose); got != want {
		t.Errorf("no go.mod:\n%s\nwant\n%s", got, want)
	}
	if err := os.WriteFile(loose, []byte(parentOf("sub/c.yaml")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := lintOne(t, loose); got != "" {
		t.Errorf("no go.mod, a child below: %s", got)
	}
}
