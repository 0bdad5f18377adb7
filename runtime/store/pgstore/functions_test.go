package pgstore_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/schema"
)

// routines is what a schema holds of functions and triggers: each one's
// definition as Postgres prints it, with the schema's name taken out.
type routines struct {
	functions map[string]string // by signature
	bodies    map[string]string // by signature: the source between the dollar quotes
	triggers  map[string]string // by name
}

func readRoutines(t *testing.T, pool *pgxpool.Pool) routines {
	t.Helper()
	ctx := t.Context()
	var ns string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&ns); err != nil {
		t.Fatal(err)
	}
	r := routines{functions: map[string]string{}, bodies: map[string]string{}, triggers: map[string]string{}}
	rows, err := pool.Query(ctx, `SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid), p.prosrc
		FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var sig, def, src string
		if err := rows.Scan(&sig, &def, &src); err != nil {
			t.Fatal(err)
		}
		r.functions[sig] = strings.ReplaceAll(def, ns+".", "")
		r.bodies[sig] = src
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = pool.Query(ctx, `SELECT t.tgname, pg_get_triggerdef(t.oid)
		FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		r.triggers[name] = strings.ReplaceAll(def, ns+".", "")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

// migratedFrom returns a pool on a new schema that binaries of earlier
// versions migrated, one version at a time, to each of the versions
// given, and this binary then migrated.
func migratedFrom(t *testing.T, versions ...int) *pgxpool.Pool {
	t.Helper()
	ctx := t.Context()
	pool, err := pgstore.Connect(ctx, pgtest.EmptySchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, v := range versions {
		if _, err := pgstore.MigrateTo(ctx, pool, v); err != nil {
			t.Fatalf("migrating to version %d: %v", v, err)
		}
	}
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatalf("migrating from version %v: %v", versions, err)
	}
	return pool
}

var (
	fileFunction = regexp.MustCompile(`CREATE OR REPLACE FUNCTION (\w+)\(`)
	fileTrigger  = regexp.MustCompile(`CREATE OR REPLACE TRIGGER (\w+) `)
)

// Whatever version a database is upgraded from, and however, it ends with
// the same functions and triggers as a new one: those schema/functions
// defines, and no others.
func TestMigrateLeavesTheFunctionsOfTheFilesWhateverTheUpgradePath(t *testing.T) {
	all, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	files, err := schema.FunctionFiles()
	if err != nil {
		t.Fatal(err)
	}
	fresh := readRoutines(t, migratedFrom(t))

	var text strings.Builder
	for _, f := range files {
		text.WriteString(f.SQL)
	}
	names := func(re *regexp.Regexp) []string {
		var out []string
		for _, m := range re.FindAllStringSubmatch(text.String(), -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	var functions []string
	for sig, body := range fresh.bodies {
		name, _, _ := strings.Cut(sig, "(")
		functions = append(functions, name)
		if !strings.Contains(text.String(), "$$"+body+"$$") {
			t.Errorf("the body of %s is not in schema/functions:\n%s", sig, body)
		}
	}
	slices.Sort(functions)
	if want := names(fileFunction); !slices.Equal(functions, want) {
		t.Errorf("functions of a new database: %v\nschema/functions defines: %v", functions, want)
	}
	if got, want := slices.Sorted(maps.Keys(fresh.triggers)), names(fileTrigger); !slices.Equal(got, want) {
		t.Errorf("triggers of a new database: %v\nschema/functions defines: %v", got, want)
	}

	paths := map[string][]int{}
	var stepwise []int
	for v := 1; v <= len(all); v++ {
		paths[fmt.Sprintf("from %04d", v)] = []int{v}
		stepwise = append(stepwise, v)
	}
	paths["one version at a time"] = stepwise
	for name, versions := range paths {
		t.Run(name, func(t *testing.T) {
			upgraded := readRoutines(t, migratedFrom(t, versions...))
			for _, kind := range []struct {
				what      string
				got, want map[string]string
			}{
				{"function", upgraded.functions, fresh.functions},
				{"trigger", upgraded.triggers, fresh.triggers},
			} {
				for _, key := range slices.Sorted(maps.Keys(kind.want)) {
					if kind.got[key] != kind.want[key] {
						t.Errorf("%s %s:\n%s\nin a new database:\n%s", kind.what, key, kind.got[key], kind.want[key])
					}
				}
				for key := range kind.got {
					if _, ok := kind.want[key]; !ok {
						t.Errorf("%s %s, which a new database does not have", kind.what, key)
					}
				}
			}
		})
	}
}

func functionState(t *testing.T, pool *pgxpool.Pool) pgstore.FunctionsState {
	t.Helper()
	s, err := pgstore.FunctionStatus(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.WithoutCancel(t.Context()), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// Migrate applies a function file again only when it changed since it
// was last applied, and then only that file; up to date, it changes
// nothing.
func TestMigrateAppliesOnlyTheFunctionFilesThatChanged(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	before := functionState(t, pool)
	if !before.Current() || before.Version != schema.FunctionsVersion {
		t.Fatalf("after Migrate: %+v, want current at version %d", before, schema.FunctionsVersion)
	}
	if done, err := pgstore.Migrate(ctx, pool); err != nil || len(done) != 0 {
		t.Fatalf("Migrate again = %v, %v", done, err)
	}
	if again := functionState(t, pool); !slices.EqualFunc(again.Files, before.Files, sameApplication) {
		t.Errorf("Migrate up to date applied function files again:\n%+v\nbefore:\n%+v", again.Files, before.Files)
	}

	// As if trellis_lane.sql had changed since it was applied.
	mustExec(t, pool, `UPDATE trellis_function_files SET checksum = 'older' WHERE name = 'trellis_lane.sql'`)
	mustExec(t, pool, `CREATE OR REPLACE FUNCTION trellis_lane(p_priority smallint, p_in_progress boolean) RETURNS smallint
		LANGUAGE sql IMMUTABLE AS $$ SELECT 0::smallint $$`)
	changed := functionState(t, pool)
	if changed.Current() {
		t.Errorf("with trellis_lane.sql changed: %+v, want not current", changed)
	}
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var lane int
	if err := pool.QueryRow(ctx, `SELECT trellis_lane(3::smallint, true)`).Scan(&lane); err != nil || lane != 7 {
		t.Errorf("trellis_lane(3, true) = %d, %v after Migrate; want 7", lane, err)
	}
	after := functionState(t, pool)
	if !after.Current() {
		t.Errorf("after Migrate: %+v, want current", after)
	}
	for i, f := range after.Files {
		if reapplied := !sameApplication(f, before.Files[i]); reapplied != (f.Name == "trellis_lane.sql") {
			t.Errorf("%s applied again: %v", f.Name, reapplied)
		}
	}
}

func sameApplication(a, b pgstore.FunctionFileState) bool {
	return a.Name == b.Name && a.Current == b.Current && (a.AppliedAt == nil) == (b.AppliedAt == nil) &&
		(a.AppliedAt == nil || a.AppliedAt.Equal(*b.AppliedAt))
}

// Functions a binary of a higher FunctionsVersion applied stay, even
// where this binary's differ: a binary of the release before, started
// during a rolling upgrade, does not undo the upgrade.
func TestMigrateLeavesFunctionsOfANewerBinaryAlone(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	mustExec(t, pool, `UPDATE trellis_function_files SET version = $1, checksum = 'newer' WHERE name = 'trellis_lane.sql'`,
		schema.FunctionsVersion+1)
	mustExec(t, pool, `CREATE OR REPLACE FUNCTION trellis_lane(p_priority smallint, p_in_progress boolean) RETURNS smallint
		LANGUAGE sql IMMUTABLE AS $$ SELECT 0::smallint $$`)
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var lane int
	if err := pool.QueryRow(ctx, `SELECT trellis_lane(3::smallint, true)`).Scan(&lane); err != nil || lane != 0 {
		t.Errorf("trellis_lane(3, true) = %d, %v after Migrate; want 0, the newer binary's", lane, err)
	}
	if s := functionState(t, pool); s.Version != schema.FunctionsVersion+1 || !s.Current() {
		t.Errorf("status = %+v, want version %d and current", s, schema.FunctionsVersion+1)
	}
}

// A database that binaries before schema/functions migrated has no
// record of function files: its functions are pending until Migrate
// applies them all.
func TestMigrateRecordsTheFunctionsOfAnOlderDatabase(t *testing.T) {
	ctx := t.Context()
	pool, err := pgstore.Connect(ctx, pgtest.EmptySchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	all, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.MigrateTo(ctx, pool, len(all)); err != nil {
		t.Fatal(err)
	}
	s := functionState(t, pool)
	if s.Current() || s.Version != 0 {
		t.Errorf("before: %+v, want version 0, pending", s)
	}
	for _, f := range s.Files {
		if f.AppliedAt != nil || f.Current {
			t.Errorf("before: %+v, want never applied", f)
		}
	}
	if done, err := pgstore.Migrate(ctx, pool); err != nil || len(done) != 0 {
		t.Fatalf("Migrate = %v, %v; want no migration", done, err)
	}
	s = functionState(t, pool)
	if !s.Current() || s.Version != schema.FunctionsVersion {
		t.Errorf("after: %+v, want current at version %d", s, schema.FunctionsVersion)
	}
	for _, f := range s.Files {
		if f.AppliedAt == nil || !f.Current {
			t.Errorf("after: %+v, want applied", f)
		}
	}
}
