package schema

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
)

// The Postgres functions and their triggers, one file each (a family of
// functions sharing a prefix, such as trellis_kind_*, shares one): the
// current definition, applied after the migrations by CREATE OR REPLACE,
// so that a file says what the database runs. See docs/postgres-schema.md.
//
//go:embed functions/*.sql
var functionFiles embed.FS

// FunctionsTable creates the table recording which function files have
// been applied, unless it exists. Like MigrationsTable it is not a
// migration: it runs before them.
//
//go:embed bootstrap/trellis_function_files.sql
var FunctionsTable string

// FunctionsVersion numbers the contents of schema/functions. It goes up
// by one with every change to a file there (a test compares the files
// with checksumAtVersion and says when to bump it), so that Migrate can
// tell an older binary's functions from a newer one's: it never replaces
// functions applied by a binary of a higher FunctionsVersion, which a
// binary of the previous release, started during a rolling upgrade,
// would otherwise do.
const FunctionsVersion = 4

// checksumAtVersion is functionsChecksum of the files at FunctionsVersion.
const checksumAtVersion = "a78321e7f18d2f361dc6eeeb5a05eeac099ec014c9a211de458d199270ffbbfa"

// FunctionFile is one file of schema/functions.
type FunctionFile struct {
	// Name is the file's name, such as trellis_enqueue.sql.
	Name string
	SQL  string
	// Checksum is the SHA-256 of SQL, in hex: what Migrate records when it
	// applies the file, and compares to know whether it changed since.
	Checksum string
}

// functionOrder is the order in which the files of schema/functions are
// applied. retired.sql goes first: it drops what no file defines any
// more, which frees a changed signature's name. Then each function goes
// after every function its body calls when that body is LANGUAGE sql,
// which Postgres checks when the function is created (a plpgsql body is
// checked only when it runs); a trigger goes in its function's file,
// after the function. Every file is listed once; FunctionFiles fails
// otherwise.
func functionOrder() []string {
	return []string{
		"retired.sql",
		"trellis_channel.sql",
		"trellis_kind.sql",
		"trellis_woken.sql",
		"trellis_lane.sql",
		"trellis_enqueue.sql",
		"trellis_admit.sql",
		"trellis_release.sql",
		"trellis_pace.sql",
		"trellis_unpace.sql",
		"trellis_wake.sql",
		"trellis_cancel_children.sql",
		"trellis_run_ended.sql",
		"trellis_run_limit.sql",
		"trellis_run_limit_release.sql",
		"trellis_event_lock.sql",
	}
}

// FunctionFiles returns the embedded function files in the order they
// are applied. It fails when a file is missing from that order, or the
// order names a file that is not there.
func FunctionFiles() ([]FunctionFile, error) {
	sub, err := fs.Sub(functionFiles, "functions")
	if err != nil {
		return nil, err
	}
	return parseFunctionFiles(sub, functionOrder())
}

func parseFunctionFiles(fsys fs.FS, order []string) ([]FunctionFile, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if !slices.Contains(order, name) {
			return nil, fmt.Errorf("function file %s: add it to functionOrder in schema/functions.go, after the functions its SQL calls", name)
		}
	}
	out := make([]FunctionFile, 0, len(order))
	seen := map[string]bool{}
	for _, name := range order {
		if seen[name] {
			return nil, fmt.Errorf("functionOrder lists %s twice", name)
		}
		seen[name] = true
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("functionOrder lists %s: %w", name, err)
		}
		sum := sha256.Sum256(text)
		out = append(out, FunctionFile{Name: name, SQL: string(text), Checksum: hex.EncodeToString(sum[:])})
	}
	return out, nil
}

// functionsChecksum is one checksum of the files, their names and their
// order: it changes with any change to schema/functions.
func functionsChecksum(files []FunctionFile) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%s\x00", f.Name, f.Checksum)
	}
	return hex.EncodeToString(h.Sum(nil))
}
