package schema

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestEmbeddedMigrationsAreValid(t *testing.T) {
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Version != 1 || ms[0].Name != "init" || !strings.Contains(ms[0].SQL, "CREATE TABLE trellis_runs") {
		t.Fatalf("migrations = %+v", ms)
	}
}

func TestMigrationNamesAreChecked(t *testing.T) {
	tests := []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"0001_a.sql": "", "0003_c.sql": ""}, "without gaps; found 3 where 2 belongs"},
		{map[string]string{"0001_a.sql": "", "0001_b.sql": ""}, "share version 1"},
		{map[string]string{"1_a.sql": ""}, "name it NNNN_description.sql"},
		{map[string]string{"0002_a.sql": ""}, "found 2 where 1 belongs"},
	}
	for _, tt := range tests {
		fsys := fstest.MapFS{}
		for name, body := range tt.files {
			fsys[name] = &fstest.MapFile{Data: []byte(body)}
		}
		if _, err := parseMigrations(fsys); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseMigrations(%v) = %v, want %q", tt.files, err, tt.want)
		}
	}
}
