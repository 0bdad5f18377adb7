package cli

import "testing"

// TestLintSaysOK shows what lint prints on clean files, in each format
// and with -q, and that -q still prints problems.
func TestLintSaysOK(t *testing.T) {
	dir := workspace(t, map[string]string{
		"flows/greet.yaml":   validWorkflow,
		"flows/ci.yaml":      "jobs: {build: {runs-on: linux}}\n",
		"one/greet.yaml":     validWorkflow,
		"broken/broken.yaml": brokenWorkflow,
	})
	transcript(t, "lint-ok.txt", dir, nil,
		[]string{"lint", "flows"},
		[]string{"lint", "one/greet.yaml", "flows/greet.yaml"},
		[]string{"lint", "-q", "flows"},
		[]string{"lint", "flows", "-quiet"},
		[]string{"lint", "-format", "json", "flows"},
		[]string{"lint", "-format", "github", "flows"},
		[]string{"lint", "-q", "broken"},
	)
}
