package gen

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// MaxFileSize is the most a workflow file may hold, 4 MiB: a hundred
// times the largest real workflow, and little enough to read whole. Lint,
// generate and graph refuse larger files rather than read on.
const MaxFileSize = 4 << 20

var (
	// ErrTooLarge is returned for a workflow file of more than
	// MaxFileSize bytes.
	ErrTooLarge = fmt.Errorf("larger than %d MiB, the most a workflow file may hold", MaxFileSize>>20)
	// ErrNotRegular is returned for a workflow file that is a directory, a
	// device (/dev/zero), a pipe or a socket: not a file to read.
	ErrNotRegular = errors.New("not a regular file")
)

// ReadFile reads the workflow file at path: a regular file, or a symlink
// to one, of at most MaxFileSize bytes. Its errors wrap ErrNotRegular and
// ErrTooLarge.
func ReadFile(path string) ([]byte, error) {
	src, err := readPrefix(path)
	if errors.Is(err, ErrTooLarge) {
		return nil, err
	}
	return src, err
}

// readPrefix is ReadFile, except that for a file over MaxFileSize it
// returns the file's first MaxFileSize bytes as well as ErrTooLarge.
func readPrefix(path string) ([]byte, error) {
	// Stat first: opening a pipe would wait for a writer.
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f)
}

// readCapped reads f, an open regular file, up to MaxFileSize bytes;
// with ErrTooLarge when there is more.
func readCapped(f *os.File) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() { // replaced since it was looked at
		return nil, ErrNotRegular
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(src) > MaxFileSize {
		return src[:MaxFileSize], ErrTooLarge
	}
	return src, nil
}

// errOutside is what readInModule's errors wrap for a file outside the
// module.
var errOutside = errors.New("outside the module")

// module is the directory a workflow file's child workflows must be in:
// the nearest directory holding go.mod at or above the file's directory,
// or, when there is none, the file's directory itself.
type module struct {
	dir  string // absolute, as found by walking up (symlinks not resolved)
	real string // dir with symlinks resolved
	// goMod is false when no go.mod was found and dir is the workflow
	// file's directory.
	goMod bool
}

// moduleOf returns the module of the workflow files of dir.
func (r *resolver) moduleOf(dir string) (*module, error) {
	if m, ok := r.modules[dir]; ok {
		return m, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	m := &module{dir: abs}
	for d := abs; ; d = filepath.Dir(d) {
		if info, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && !info.IsDir() {
			m.dir, m.goMod = d, true
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if m.real, err = filepath.EvalSymlinks(m.dir); err != nil {
		return nil, err
	}
	r.modules[dir] = m
	return m, nil
}

// describe says where the module is, for the workflow files of dir: "the
// directory of go.mod, ../.." or "this file's directory, as no go.mod is
// above it".
func (m *module) describe(dir string) string {
	if !m.goMod {
		return "this file's directory, as no go.mod is above it"
	}
	where := m.dir
	if abs, err := filepath.Abs(dir); err == nil {
		if rel, err := filepath.Rel(abs, m.dir); err == nil {
			where = filepath.ToSlash(rel)
		}
	}
	return "the directory of go.mod, " + where
}

// within reports whether path is dir or inside it; both are clean and
// absolute.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// childPath is the path of the file a child workflow step of a workflow
// file in dir names with file: relative to dir, slash-separated.
func childPath(dir, file string) (string, error) {
	if path.IsAbs(file) || filepath.IsAbs(file) || filepath.VolumeName(file) != "" {
		return "", errors.New("an absolute path: give the path of the child's file relative to this file's directory")
	}
	return filepath.Join(dir, filepath.FromSlash(file)), nil
}

// readInModule reads the workflow file at path, which a workflow file in
// dir refers to: a regular file inside dir's module, even once symlinks
// are followed, of at most MaxFileSize bytes.
func (r *resolver) readInModule(dir, path string) ([]byte, error) {
	m, err := r.moduleOf(dir)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if !within(m.dir, abs) {
		return nil, fmt.Errorf("%w (%s); a child's file must be inside it", errOutside, m.describe(dir))
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	if !within(m.real, real) {
		return nil, fmt.Errorf("a symlink that leads %w (%s); a child's file must be inside it", errOutside, m.describe(dir))
	}
	// Open through an os.Root, so that a symlink changed since it was
	// followed cannot lead out either.
	root, err := os.OpenRoot(m.real)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	rel, err := filepath.Rel(m.real, real)
	if err != nil {
		return nil, err
	}
	info, err := root.Stat(rel) // not Open: opening a pipe would wait for a writer
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := readCapped(f)
	if errors.Is(err, ErrTooLarge) {
		return nil, err
	}
	return src, err
}
