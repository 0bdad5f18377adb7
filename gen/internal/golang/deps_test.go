package golang

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDoesNotImportTheEngine keeps the generator off the engine: it
// builds specs with the leaf package schema/spec, and names the runtime
// in generated code only by its import path. Depending on the engine
// would make every change to it a change to the generator's build, and
// tie the generator's version to the engine's.
func TestDoesNotImportTheEngine(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == runtimePkg {
			t.Fatalf("gen/internal/golang depends on %s; build specs with package spec instead", runtimePkg)
		}
	}
}
