package gen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ErrNoSuchPath is returned by Find for a path that does not exist.
var ErrNoSuchPath = errors.New("no such file or directory")

// topLevelSteps matches a steps key at the top level of a YAML mapping.
// It is what tells a workflow file from other YAML (CI configs, sqlc.yaml)
// when searching directories, and it works on files too broken to parse,
// which lint must still report.
var topLevelSteps = regexp.MustCompile(`(?m)^(steps|"steps"|'steps')[ \t]*:`)

// IsWorkflow reports whether YAML source looks like a workflow file: it
// has a top-level steps key.
func IsWorkflow(src []byte) bool { return topLevelSteps.Match(src) }

// Find expands paths into workflow files. A file is taken as it is; a
// directory is searched recursively for *.yaml and *.yml files that have a
// top-level steps key, skipping directories Go tools skip too (testdata,
// vendor, and names starting with . or _). No paths means the current
// directory. Each file is listed once, in a stable order.
func Find(paths []string) ([]string, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", root, ErrNoSuchPath)
		}
		if err != nil {
			return nil, fmt.Errorf("finding workflows: %w", err)
		}
		if !info.IsDir() {
			add(root)
			continue
		}
		found, err := walk(root)
		if err != nil {
			return nil, err
		}
		for _, p := range found {
			add(p)
		}
	}
	return out, nil
}

func walk(root string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		// A file over MaxFileSize is listed if it starts like a workflow,
		// for the check to report; a pipe or device is no workflow file.
		src, err := readPrefix(path)
		if errors.Is(err, ErrNotRegular) {
			return nil
		}
		if err != nil && !errors.Is(err, ErrTooLarge) {
			return err
		}
		if IsWorkflow(src) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding workflows in %s: %w", root, err)
	}
	sort.Strings(found)
	return found, nil
}

func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || name == "node_modules" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}
