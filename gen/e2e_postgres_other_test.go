//go:build unix && !linux

package gen

import "testing"

// testPostgresQuickStart needs /proc to find the programs go run starts,
// which it stops with SIGTERM; CI runs it on Linux.
func testPostgresQuickStart(t *testing.T, ws userWorkspace, repo string) {
	t.Skip("the quick start on Postgres is tested on Linux")
}

// background is the Linux file's; follow starts none elsewhere.
type background struct{}

func (ws userWorkspace) start(t *testing.T, env []string, args ...string) *background {
	t.Fatal("run background blocks are tested on Linux")
	return nil
}
