package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestVersion(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{
			name: "go install ...@v1.2.3",
			info: debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: trellisModule, Version: "v1.2.3"}},
			want: "trellis v1.2.3, go1.26.1 " + platform,
		},
		{
			name: "a build in a clone",
			info: debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: trellisModule, Version: "(devel)"},
				Settings: []debug.BuildSetting{
					{Key: "GOOS", Value: "plan9"}, {Key: "GOARCH", Value: "arm"},
					{Key: "vcs.revision", Value: "c34432c0ffee"}, {Key: "vcs.time", Value: "2026-11-28T08:55:00Z"}, {Key: "vcs.modified", Value: "true"},
				}},
			want: "trellis (devel), revision c34432c0ffee (modified, committed 2026-11-28T08:55:00Z), go1.26.1 plan9/arm",
		},
		{
			name: "a clone built with -buildvcs=false",
			info: debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: trellisModule, Version: "(devel)"}},
			want: "trellis (devel), go1.26.1 " + platform,
		},
		{
			name: "go tool trellis in a module that requires v1.4.0",
			info: debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Path: "example.com/hello", Version: "(devel)"},
				Deps:     []*debug.Module{{Path: "github.com/google/uuid", Version: "v1.6.0"}, {Path: trellisModule, Version: "v1.4.0"}},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "the user's, not ours"}}},
			want: "trellis v1.4.0, go1.25.0 " + platform,
		},
		{
			name: "go tool trellis with a replace to a clone",
			info: debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Path: "example.com/hello", Version: "(devel)"},
				Deps: []*debug.Module{{Path: trellisModule, Version: "v0.0.0-00010101000000-000000000000", Replace: &debug.Module{Path: "../trellis", Version: "(devel)"}}}},
			want: "trellis v0.0.0-00010101000000-000000000000 => ../trellis, go1.25.0 " + platform,
		},
		{
			name: "no trellis module at all",
			info: debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Path: "example.com/other"}},
			want: "trellis unknown, go1.25.0 " + platform,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := VersionCommand{BuildInfo: func() (*debug.BuildInfo, bool) { return &tt.info, true }}
			var out, errOut bytes.Buffer
			if code := cmd.Run(context.Background(), nil, &out, &errOut); code != ExitOK {
				t.Fatalf("exit %d, stderr %q", code, errOut.String())
			}
			if got := out.String(); got != tt.want+"\n" {
				t.Errorf("trellis version printed\n%q\nwant\n%q", got, tt.want+"\n")
			}
		})
	}
}

func TestVersionJSON(t *testing.T) {
	info := debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: trellisModule, Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}}
	cmd := VersionCommand{BuildInfo: func() (*debug.BuildInfo, bool) { return &info, true }}
	var out, errOut bytes.Buffer
	if code := cmd.Run(context.Background(), []string{"-json"}, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	want := map[string]any{"version": "(devel)", "revision": "abc", "go": "go1.26.1", "os": runtime.GOOS, "arch": runtime.GOARCH}
	if len(got) != len(want) {
		t.Errorf("trellis version -json = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("trellis version -json: %s = %v, want %v", k, got[k], v)
		}
	}
}

// TestVersionOfThisBinary runs trellis version as a user does, on the
// test binary's own build information: its shape, not its revision.
func TestVersionOfThisBinary(t *testing.T) {
	code, stdout, stderr := run(t, t.TempDir(), "version")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	shape := regexp.MustCompile(`^trellis (\(devel\)|v\S+)(, revision [0-9a-f]+( \([^)]*\))?)?, go\S+ ` + regexp.QuoteMeta(runtime.GOOS+"/"+runtime.GOARCH) + "\n$")
	if !shape.MatchString(stdout) {
		t.Errorf("trellis version printed %q, want the shape %s", stdout, shape)
	}
	if code, _, _ := run(t, t.TempDir(), "version", "extra"); code != ExitUsage {
		t.Errorf("trellis version extra: exit %d, want %d", code, ExitUsage)
	}
}
