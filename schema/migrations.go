package schema

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The Postgres migrations: NNNN_name.sql, applied in order, never edited
// once released (a database records only which it applied, so an edit
// would make databases that applied the old text differ, silently, from
// new ones). They are also the schema sqlc reads. They hold the tables,
// their indexes and constraints, and data moves; functions and triggers
// live in functions/ (FunctionFiles), and the functions and triggers the
// migrations up to lastMigrationWithFunctions created are history,
// replaced by those files' definitions once the migrations have run.
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

// lastMigrationWithFunctions is the last migration that created functions
// and triggers, before schema/functions held them. Later ones may create
// only pg_temp functions, which a data move may use and which go when the
// migration's session ends: the migration then runs the same, whichever
// version of the functions the database holds.
const lastMigrationWithFunctions = 15

var (
	sqlLineComment = regexp.MustCompile(`--[^\n]*`)
	createRoutine  = regexp.MustCompile(`(?i)\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?(FUNCTION|PROCEDURE|TRIGGER)\s+("?[\w$]+"?(?:\s*\.\s*"?[\w$]+"?)?)`)
)

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
		if version > lastMigrationWithFunctions {
			if err := checkNoRoutines(name, string(text)); err != nil {
				return nil, err
			}
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

// checkNoRoutines fails when a migration creates a function, procedure or
// trigger other than a pg_temp function.
func checkNoRoutines(name, sql string) error {
	for _, m := range createRoutine.FindAllStringSubmatch(sqlLineComment.ReplaceAllString(sql, ""), -1) {
		kind, routine := strings.ToLower(m[1]), strings.ReplaceAll(m[2], `"`, "")
		if kind == "function" && strings.HasPrefix(strings.ToLower(routine), "pg_temp.") {
			continue
		}
		return fmt.Errorf("migration %s creates %s %s: functions and triggers live in schema/functions (docs/postgres-schema.md); a data move that needs a function of its own creates it in pg_temp", name, kind, routine)
	}
	return nil
}
