package schema

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
)

// The Postgres migrations: NNNN_name.sql, applied in order, never edited
// once released. They are also the schema sqlc reads.
//
//go:embed *.sql
var migrationFiles embed.FS

// MigrationsTable creates the table recording which migrations have been
// applied, unless it exists. It is not a migration: it runs before them.
//
//go:embed bootstrap/trellis_migrations.sql
var MigrationsTable string

// Migration is one numbered change to the Postgres schema.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// Migrations returns the embedded migrations in order. It fails when a
// file is misnamed, or when versions repeat or leave a gap.
func Migrations() ([]Migration, error) {
	return parseMigrations(migrationFiles)
}

func parseMigrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	seen := map[int]string{}
	for _, name := range names {
		m := migrationName.FindStringSubmatch(name)
		if m == nil {
			return nil, fmt.Errorf("migration %s: name it NNNN_description.sql (lowercase, digits, _)", name)
		}
		version, _ := strconv.Atoi(m[1])
		if prev, dup := seen[version]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, name, version)
		}
		seen[version] = name
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: version, Name: m[2], SQL: string(text)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration versions must run 1, 2, 3, ... without gaps; found %d where %d belongs", m.Version, i+1)
		}
	}
	return out, nil
}
