package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

func TestMigrateUpAndStatus(t *testing.T) {
	url := pgtest.EmptySchema(t)
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		// The flags after the action, as the docs show them.
		code := Main(t.Context(), append(append([]string{"migrate"}, args...), "-database-url", url), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	if code, out, _ := run("status"); code != ExitOK || !strings.Contains(out, "0001_init") || !strings.Contains(out, "pending") ||
		!regexp.MustCompile(`functions/trellis_enqueue.sql +pending`).MatchString(out) {
		t.Fatalf("status before = %d %q", code, out)
	}
	if code, out, errOut := run("up"); code != ExitOK || !strings.Contains(out, "applied 0001_init") ||
		!strings.Contains(out, "applied functions/trellis_enqueue.sql") {
		t.Fatalf("up = %d %q %q", code, out, errOut)
	}
	if code, out, _ := run("up"); code != ExitOK || !strings.Contains(out, "up to date") {
		t.Fatalf("second up = %d %q", code, out)
	}
	if code, out, _ := run("status"); code != ExitOK || strings.Contains(out, "pending") || !strings.Contains(out, "applied 20") ||
		!regexp.MustCompile(`functions/trellis_enqueue.sql +applied 20`).MatchString(out) {
		t.Fatalf("status after = %d %q", code, out)
	}

	// As if this binary's trellis_wake.sql differed from the one applied.
	pool, err := pgstore.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(t.Context(), `UPDATE trellis_function_files SET checksum = 'older' WHERE name = 'trellis_wake.sql'`); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run("status"); code != ExitOK || !regexp.MustCompile(`functions/trellis_wake.sql +changed since applied 20`).MatchString(out) ||
		!strings.Contains(out, "1 pending: run trellis migrate up") {
		t.Fatalf("status with a changed function file = %d %q", code, out)
	}
	if code, out, _ := run("up"); code != ExitOK || out != "applied functions/trellis_wake.sql\n" {
		t.Fatalf("up with a changed function file = %d %q", code, out)
	}
}

func TestMigrateUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "-database-url", "postgres://x"}, "say up or status"},
		{[]string{"migrate", "-database-url", "postgres://x", "sideways"}, `unknown action "sideways"`},
		{[]string{"migrate", "-database-url", "", "up"}, "no database"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		if code := Main(t.Context(), tt.args, &out, &errOut); code != ExitUsage || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("%v = %d %q, want usage error %q", tt.args, code, errOut.String(), tt.want)
		}
	}
}

func TestMigrateReportsUnreachableDatabase(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main(t.Context(), []string{"migrate", "-database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2", "up"}, &out, &errOut)
	if code != ExitProblems || !strings.Contains(errOut.String(), "connecting") {
		t.Errorf("unreachable database = %d %q", code, errOut.String())
	}
}
