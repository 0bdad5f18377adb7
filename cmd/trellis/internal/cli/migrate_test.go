package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

func TestMigrateUpAndStatus(t *testing.T) {
	url := pgtest.EmptySchema(t)
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := Main(t.Context(), append([]string{"migrate", "-database-url", url}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	if code, out, _ := run("status"); code != ExitOK || !strings.Contains(out, "0001_init") || !strings.Contains(out, "pending") {
		t.Fatalf("status before = %d %q", code, out)
	}
	if code, out, errOut := run("up"); code != ExitOK || !strings.Contains(out, "applied 0001_init") {
		t.Fatalf("up = %d %q %q", code, out, errOut)
	}
	if code, out, _ := run("up"); code != ExitOK || !strings.Contains(out, "up to date") {
		t.Fatalf("second up = %d %q", code, out)
	}
	if code, out, _ := run("status"); code != ExitOK || strings.Contains(out, "pending") || !strings.Contains(out, "applied 20") {
		t.Fatalf("status after = %d %q", code, out)
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
