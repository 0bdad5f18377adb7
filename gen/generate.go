package gen

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/effectivelabs/trellis/gen/internal/golang"
	"github.com/effectivelabs/trellis/schema/spec"
)

// Output is a generated Go file.
type Output struct {
	// Path is where the file goes: OutputPath of the workflow file.
	Path string
	// Content is the gofmt'ed source.
	Content []byte
	// Source is the path of the workflow file.
	Source string
	// Spec is the workflow spec the file embeds, for what else is derived
	// from the workflow beside its code, such as its graph (GraphPath).
	Spec *spec.Workflow
}

// Generate checks the workflow files at paths and, only if none has a
// problem, generates the code of each, so that a broken file never leaves
// a half-updated package behind. pkg names the Go package of every file;
// empty means PackageName of each file's directory.
func (g *Generator) Generate(paths []string, pkg string) ([]Output, []Problem, error) {
	files, err := g.checkAll(paths)
	if err != nil {
		return nil, nil, err
	}
	var problems []Problem
	for _, f := range files {
		problems = append(problems, f.Problems...)
	}
	if len(problems) > 0 {
		return nil, problems, nil
	}
	outputs := make([]Output, 0, len(files))
	pkgs := map[string]string{}
	for _, f := range files {
		name := pkg
		if name == "" {
			dir := filepath.Dir(f.Path)
			if _, ok := pkgs[dir]; !ok {
				if pkgs[dir], err = PackageName(dir); err != nil {
					return nil, nil, err
				}
			}
			name = pkgs[dir]
		}
		src, err := GenerateFile(f, name)
		if err != nil {
			return nil, nil, err
		}
		outputs = append(outputs, Output{Path: OutputPath(f.Path), Content: src, Source: f.Path, Spec: f.Spec()})
	}
	return outputs, nil, nil
}

// GenerateFile renders the code of one checked file into package pkg. The
// file must have no problems.
func GenerateFile(f *File, pkg string) ([]byte, error) {
	if len(f.Problems) > 0 || f.plan == nil {
		return nil, fmt.Errorf("generating %s: the file has problems; lint it", f.Path)
	}
	if err := CheckPackageName(pkg); err != nil {
		return nil, err
	}
	return golang.Generate(f.plan, pkg)
}

// CheckPackageName reports whether name can be a Go package name.
func CheckPackageName(name string) error {
	if !token.IsIdentifier(name) || name == "_" {
		return fmt.Errorf("%q is not a valid Go package name", name)
	}
	return nil
}

// PackageName decides the package of the code generated into dir: the
// package of the hand-written (not generated, not test) Go files already
// there, or else the directory's name made a valid identifier.
func PackageName(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("choosing the package name for %s: %w", dir, err)
	}
	found := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || filepath.Ext(name) != ".go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		// The package clause is at the top: the first MaxFileSize bytes
		// hold it. A pipe or a device named .go is skipped.
		src, err := readPrefix(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, ErrTooLarge) {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), src, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil || ast.IsGenerated(f) {
			continue
		}
		found[f.Name.Name] = true
	}
	switch len(found) {
	case 1:
		for name := range found {
			return name, nil
		}
	case 0:
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("choosing the package name for %s: %w", dir, err)
		}
		return sanitizePackage(filepath.Base(abs)), nil
	}
	names := make([]string, 0, len(found))
	for name := range found {
		names = append(names, name)
	}
	sort.Strings(names)
	return "", errors.New("choosing the package name for " + dir + ": its Go files belong to packages " +
		strings.Join(names, " and ") + "; pass -package")
}

// sanitizePackage turns a directory name into a package name the way Go
// developers would: lower-case letters and digits only (orders-v2 ->
// ordersv2).
func sanitizePackage(dir string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(dir) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		}
	}
	name := b.String()
	switch {
	case name == "":
		return "workflow"
	case unicode.IsDigit(rune(name[0])):
		name = "p" + name
	case token.IsKeyword(name):
		name += "pkg"
	}
	return name
}
