package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// trellisModule is the module the trellis command is built from.
const trellisModule = "github.com/effectivelabs/trellis"

// VersionCommand is trellis version: which Trellis the binary was built
// from, as the Go toolchain recorded it, for bug reports and for checking
// that go tool trellis runs the version a module requires.
type VersionCommand struct {
	// BuildInfo reads the binary's build information; nil is
	// runtime/debug.ReadBuildInfo (tests give their own).
	BuildInfo func() (*debug.BuildInfo, bool)
}

// Name implements Command.
func (VersionCommand) Name() string { return "version" }

// Summary implements Command.
func (VersionCommand) Summary() string {
	return "print the version of Trellis this binary was built from, and its Go version"
}

// Version is what trellis version prints, and its JSON form.
type Version struct {
	// Version is the Trellis module's version: v1.2.3 for go install
	// ...@v1.2.3, the version a module requires for go tool trellis, or
	// (devel) for a build in a clone.
	Version string `json:"version"`
	// Replace is where a replace directive points the module, as in
	// go.mod (../trellis), when there is one.
	Replace string `json:"replace,omitempty"`
	// Revision, Time and Modified describe the commit of a build in a
	// clone, when Go recorded them (it does unless -buildvcs=false).
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Go is the Go version the binary was built with; OS and Arch its
	// platform.
	Go   string `json:"go"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// String is the one line trellis version prints.
func (v Version) String() string {
	var b strings.Builder
	b.WriteString("trellis " + v.Version)
	if v.Replace != "" {
		b.WriteString(" => " + v.Replace)
	}
	if v.Revision != "" {
		b.WriteString(", revision " + v.Revision)
		var notes []string
		if v.Modified {
			notes = append(notes, "modified")
		}
		if v.Time != "" {
			notes = append(notes, "committed "+v.Time)
		}
		if len(notes) > 0 {
			b.WriteString(" (" + strings.Join(notes, ", ") + ")")
		}
	}
	fmt.Fprintf(&b, ", %s %s/%s", v.Go, v.OS, v.Arch)
	return b.String()
}

// versionOf reads the Trellis version out of a binary's build
// information: the main module's when trellis is built in its own module
// (a clone, go install ...@version), else the dependency's (go tool
// trellis in a user's module).
func versionOf(info *debug.BuildInfo) Version {
	v := Version{Version: "unknown", Go: info.GoVersion, OS: runtime.GOOS, Arch: runtime.GOARCH}
	mod := &info.Main
	if mod.Path != trellisModule {
		mod = nil
		for _, d := range info.Deps {
			if d.Path == trellisModule {
				mod = d
				break
			}
		}
	}
	if mod != nil {
		if mod.Version != "" {
			v.Version = mod.Version
		}
		if r := mod.Replace; r != nil {
			v.Replace = r.Path
			if r.Version != "" && r.Version != "(devel)" { // a directory's: no version
				v.Replace += " " + r.Version
			}
		}
	}
	if mod == &info.Main {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			case "GOOS":
				v.OS = s.Value
			case "GOARCH":
				v.Arch = s.Value
			}
		}
	}
	return v
}

// Run implements Command.
func (c VersionCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.Name(), "[-json]",
		"Version prints the version of Trellis this binary was built from: the module\nversion (v1.2.3 after go install ...@v1.2.3; the version your module requires for\ngo tool trellis; (devel) in a clone, with the commit when Go recorded it), and the\nGo version and platform it was built with.")
	asJSON := fs.Bool("json", false, "print a JSON object (version, replace, revision, time, modified, go, os, arch)")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "trellis version: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	read := c.BuildInfo
	if read == nil {
		read = debug.ReadBuildInfo
	}
	info, ok := read()
	if !ok {
		fmt.Fprintln(stderr, "trellis version: the binary has no build information (built without module support)")
		return ExitProblems
	}
	v := versionOf(info)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			fmt.Fprintf(stderr, "trellis version: %v\n", err)
			return ExitProblems
		}
		return ExitOK
	}
	fmt.Fprintln(stdout, v)
	return ExitOK
}
