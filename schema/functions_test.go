package schema

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

// The files change only with FunctionsVersion, so that Migrate can tell
// an older binary's functions from a newer one's.
func TestFunctionsVersionFollowsTheFiles(t *testing.T) {
	files, err := FunctionFiles()
	if err != nil {
		t.Fatal(err)
	}
	if got := functionsChecksum(files); got != checksumAtVersion {
		t.Fatalf("schema/functions changed since FunctionsVersion %d was set: in schema/functions.go, set FunctionsVersion to %d and checksumAtVersion to %q",
			FunctionsVersion, FunctionsVersion+1, got)
	}
}

var (
	createStatement = regexp.MustCompile(`(?im)^\s*CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|TRIGGER)\s+(\w+)`)
	triggerFunction = regexp.MustCompile(`(?i)EXECUTE\s+FUNCTION\s+(\w+)\(`)
)

// Each file defines the functions it is named after, and only by CREATE
// OR REPLACE, so that applying it again changes nothing; a trigger is in
// its function's file.
func TestFunctionFilesDefineWhatTheyAreNamedAfter(t *testing.T) {
	files, err := FunctionFiles()
	if err != nil {
		t.Fatal(err)
	}
	if files[0].Name != "retired.sql" {
		t.Errorf("first file = %s, want retired.sql", files[0].Name)
	}
	if strings.Contains(strings.ToUpper(files[0].SQL), "CREATE") {
		t.Errorf("retired.sql creates something; it only drops")
	}
	for _, f := range files[1:] {
		stem := strings.TrimSuffix(f.Name, ".sql")
		defs := createStatement.FindAllStringSubmatch(f.SQL, -1)
		if len(defs) == 0 {
			t.Errorf("%s defines no function", f.Name)
		}
		for _, d := range defs {
			if d[1] == "" {
				t.Errorf("%s: CREATE %s %s: say CREATE OR REPLACE, so that the file applies again", f.Name, d[2], d[3])
			}
			if d[3] != stem && !strings.HasPrefix(d[3], stem+"_") {
				t.Errorf("%s defines %s %s: put it in %s.sql", f.Name, strings.ToLower(d[2]), d[3], d[3])
			}
		}
		for _, m := range triggerFunction.FindAllStringSubmatch(f.SQL, -1) {
			if m[1] != stem {
				t.Errorf("%s: a trigger executing %s; put it in %s.sql", f.Name, m[1], m[1])
			}
		}
	}
}

func TestFunctionOrderIsChecked(t *testing.T) {
	fsys := fstest.MapFS{"a.sql": {Data: []byte("a")}, "b.sql": {Data: []byte("b")}}
	tests := []struct {
		order []string
		want  string
	}{
		{[]string{"a.sql"}, "function file b.sql: add it to functionOrder"},
		{[]string{"a.sql", "b.sql", "a.sql"}, "lists a.sql twice"},
		{[]string{"a.sql", "b.sql", "c.sql"}, "lists c.sql"},
	}
	for _, tt := range tests {
		if _, err := parseFunctionFiles(fsys, tt.order); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseFunctionFiles(%v) = %v, want %q", tt.order, err, tt.want)
		}
	}
	files, err := parseFunctionFiles(fsys, []string{"b.sql", "a.sql"})
	if err != nil || len(files) != 2 || files[0].Name != "b.sql" || files[1].SQL != "a" || files[0].Checksum == files[1].Checksum {
		t.Errorf("parseFunctionFiles in order b, a = %+v, %v", files, err)
	}
}

// Migrations after lastMigrationWithFunctions leave functions and
// triggers to schema/functions, but for pg_temp helpers of a data move.
func TestLaterMigrationsCreateNoFunctions(t *testing.T) {
	tests := []struct {
		sql  string
		want string // "" when the migration is accepted
	}{
		{"ALTER TABLE t ADD COLUMN c text;\n-- CREATE FUNCTION in a comment is fine\n", ""},
		{"CREATE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\nUPDATE t SET c = pg_temp.f();", ""},
		{"create or replace function trellis_x() returns int language sql as $$ select 1 $$;", "creates function trellis_x"},
		{"CREATE FUNCTION public.trellis_x() RETURNS int", "creates function public.trellis_x"},
		{"CREATE TRIGGER trellis_x AFTER UPDATE ON t FOR EACH ROW EXECUTE FUNCTION pg_temp.f();", "creates trigger trellis_x"},
		{"CREATE OR REPLACE PROCEDURE p() LANGUAGE sql AS $$ $$;", "creates procedure p"},
	}
	for _, tt := range tests {
		fsys := fstest.MapFS{}
		for v := 1; v <= lastMigrationWithFunctions+1; v++ {
			body := "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;" // allowed until then
			if v > lastMigrationWithFunctions {
				body = tt.sql
			}
			fsys[fmt.Sprintf("%04d_m.sql", v)] = &fstest.MapFile{Data: []byte(body)}
		}
		_, err := parseMigrations(fsys)
		if tt.want == "" && err != nil {
			t.Errorf("%q: %v", tt.sql, err)
		}
		if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%q: %v, want %q", tt.sql, err, tt.want)
		}
	}
}
