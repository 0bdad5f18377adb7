//go:build unix

package gen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestEndToEndInAUserModule follows the README's Quick start to the letter,
// so that it fails when a reader following it would: it reads the commands,
// the files and the expected output from README.md (the code blocks marked
// with <!-- quickstart: ... --> comments), and in a new, empty directory
// next to a "clone" (../trellis, a link to this repository) it runs every
// command, writes every file, in the README's order, and compares the
// output of the last command before each output block with that block.
//
// It does so on an empty module cache, as on a new machine: every module
// comes through GOPROXY. To keep that fast, the proxy list starts with the
// caller's own module cache (a file:// proxy that answers "not found" for
// what it does not have, so the configured proxies come next), and the
// directories live at a fixed place in the user's cache directory, emptied
// before and after, so that their paths, which the build cache keys on,
// do not change and compiled packages are reused. A lock keeps concurrent
// runs (several clones, several test processes) apart.
//
// Then the same module takes a schema-rich workflow and checks that go
// generate, go vet and go test pass on it.
func TestEndToEndInAUserModule(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := quickStart(readme)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}

	ws := newUserWorkspace(t, goTool, repo)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goTool, args...)
		cmd.Dir, cmd.Env = ws.module, ws.env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}

	var last string // stdout of the last command run
	for _, b := range blocks {
		switch b.kind {
		case "file":
			writeFile(t, filepath.Join(ws.module, filepath.FromSlash(b.arg)), b.text)
		case "run":
			for _, args := range b.commands {
				last = run(args[1:]...)
			}
		case "output":
			if got, want := strings.TrimSpace(last), strings.TrimSpace(b.text); got != want {
				t.Fatalf("README.md:%d: the Quick start shows the output\n%s\nbut its program prints\n%s", b.line, want, got)
			}
		}
	}

	t.Run("schema-rich workflow", func(t *testing.T) {
		workflow, err := os.ReadFile(filepath.Join(goldenRoot, "rich", "shipping.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string]string{
			"shipping/shipping.yaml": string(workflow),
			"shipping/doc.go":        userDoc,
			"shipping/steps.go":      userSteps,
			"shipping/steps_test.go": userTest,
		} {
			writeFile(t, filepath.Join(ws.module, filepath.FromSlash(name)), content)
		}
		run("generate", "./shipping")
		run("vet", "./...")
		run("test", "./shipping")
	})
}

// A quickStartBlock is a marked code block of the README's Quick start.
type quickStartBlock struct {
	line     int        // of the marker, 1-based
	start    int        // the line of the block's first line of content
	kind     string     // run, file or output
	arg      string     // the file's path, for a file
	text     string     // the block's content
	commands [][]string // for run: one go command a line, split into words
}

var (
	quickStartMarker = regexp.MustCompile(`^<!-- quickstart: (run|output|file ([^ ]+)) -->$`)
	// shellSyntax is what the test, which runs commands without a shell,
	// cannot run the way a shell would.
	shellSyntax = "&|;<>()$`'\"\\*?~"
)

// quickStart returns the marked code blocks of README.md's Quick start
// section, in order. Every code block of the section must be marked: a
// reader copies them all.
func quickStart(readme []byte) ([]quickStartBlock, error) {
	var (
		blocks    []quickStartBlock
		inSection bool
		pending   *quickStartBlock // marker seen, its block not yet
		current   *quickStartBlock // inside a marked block
		body      strings.Builder
		kinds     = map[string]bool{}
	)
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case current != nil:
			if strings.HasPrefix(line, "```") {
				current.text = body.String()
				blocks = append(blocks, *current)
				current = nil
				continue
			}
			body.WriteString(line + "\n")
		case strings.HasPrefix(line, "## "):
			if inSection {
				if pending != nil {
					return nil, fmt.Errorf("line %d: marker without a code block", pending.line)
				}
				return checkQuickStart(blocks, kinds)
			}
			inSection = line == "## Quick start"
		case !inSection:
		case quickStartMarker.MatchString(line):
			if pending != nil {
				return nil, fmt.Errorf("line %d: marker without a code block", pending.line)
			}
			m := quickStartMarker.FindStringSubmatch(line)
			b := quickStartBlock{line: n, kind: strings.Fields(m[1])[0], arg: m[2]}
			if b.kind == "file" && (path.IsAbs(b.arg) || path.Clean(b.arg) != b.arg || strings.HasPrefix(b.arg, "../")) {
				return nil, fmt.Errorf("line %d: file %q is not a clean relative path", n, b.arg)
			}
			kinds[b.kind] = true
			pending = &b
		case strings.HasPrefix(line, "```"):
			if pending == nil {
				return nil, fmt.Errorf("line %d: code block of the Quick start without a <!-- quickstart: ... --> marker", n)
			}
			current, pending = pending, nil
			current.start = n + 1
			body.Reset()
		case pending != nil && strings.TrimSpace(line) != "":
			return nil, fmt.Errorf("line %d: marker not followed by a code block", pending.line)
		}
	}
	if !inSection {
		return nil, errors.New(`no "## Quick start" section`)
	}
	if current != nil || pending != nil {
		return nil, errors.New("the Quick start ends inside a marked code block")
	}
	return checkQuickStart(blocks, kinds)
}

// checkQuickStart parses the commands of run blocks and checks that the
// section has commands, files and an output to compare.
func checkQuickStart(blocks []quickStartBlock, kinds map[string]bool) ([]quickStartBlock, error) {
	for _, kind := range []string{"run", "file", "output"} {
		if !kinds[kind] {
			return nil, fmt.Errorf("the Quick start has no %s block", kind)
		}
	}
	for i, b := range blocks {
		if b.kind != "run" {
			continue
		}
		for j, line := range strings.Split(b.text, "\n") {
			if strings.HasPrefix(line, "#") {
				line = ""
			} else if k := strings.Index(line, " #"); k >= 0 {
				line = line[:k] // a comment
			}
			words := strings.Fields(line)
			if len(words) == 0 {
				continue
			}
			if words[0] != "go" || strings.ContainsAny(line, shellSyntax) {
				return nil, fmt.Errorf("line %d: %q: the test runs only plain go commands (no shell syntax)", b.start+j, line)
			}
			blocks[i].commands = append(blocks[i].commands, words)
		}
	}
	return blocks, nil
}

// A userWorkspace is where the test plays the user: module is the user's
// new directory, next to a link named trellis to this repository, and env
// the environment of the go commands.
type userWorkspace struct {
	module string
	env    []string
}

// newUserWorkspace makes an empty module directory and an empty module
// cache (see TestEndToEndInAUserModule), held until the test ends.
func newUserWorkspace(t *testing.T, goTool, repo string) userWorkspace {
	out, err := exec.Command(goTool, "env", "GOMODCACHE", "GOPROXY").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	outer := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(outer) != 2 {
		t.Fatalf("go env printed %q", out)
	}
	proxy := outer[1]
	if outer[0] != "" {
		downloads := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(outer[0], "cache", "download"))}
		proxy = downloads.String() + "," + proxy
	}

	root := t.TempDir()
	if cache, err := os.UserCacheDir(); err == nil {
		root = filepath.Join(cache, "trellis-e2e")
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		lock, err := os.OpenFile(filepath.Join(root, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lock.Close() }) // releases the lock, after the cleanup below
	}
	modCache, work := filepath.Join(root, "mod"), filepath.Join(root, "work")
	ws := userWorkspace{
		module: filepath.Join(work, "hello"),
		env:    append(os.Environ(), "GOMODCACHE="+modCache, "GOPROXY="+proxy, "GOWORK=off"),
	}
	clean := func() {
		// The module cache is read-only; go clean knows how to remove it.
		cmd := exec.Command(goTool, "clean", "-modcache")
		cmd.Dir, cmd.Env = root, ws.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
		if err := os.RemoveAll(work); err != nil {
			t.Error(err)
		}
	}
	clean()
	t.Cleanup(clean)
	if err := os.MkdirAll(ws.module, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(repo, filepath.Join(work, "trellis")); err != nil {
		t.Fatal(err)
	}
	return ws
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// userDoc is the user's package doc with its go:generate directive. The
// directive is assembled so that no line of this file starts with it:
// go generate scans source text, strings included.
const userDoc = "// Package shipping ships orders.\npackage shipping\n\n" +
	"//go:" + "generate go tool trellis generate shipping.yaml\n"

// userSteps implements the generated interface the way a user would, using
// the generated types, enums, optional fields and parents.
const userSteps = `package shipping

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime"
)

// Shipper implements ShipOrderSteps.
type Shipper struct{}

var _ ShipOrderSteps = Shipper{}

func (Shipper) Plan(ctx context.Context, in ShipOrderInput) (ShipOrderPlanOutput, error) {
	out := ShipOrderPlanOutput{}
	for i, item := range in.Items {
		size := ShipOrderPlanSizeM
		if item.Quantity > 10 {
			size = ShipOrderPlanSizeXL
		}
		out.Parcels = append(out.Parcels, ShipOrderPlanOutputParcelsItem{ID: fmt.Sprint(i), Items: []string{item.SKU}, Size: size})
	}
	if in.Customer.BillingAddress == nil {
		out.Warnings = append(out.Warnings, "no billing address")
	}
	return out, nil
}

func (Shipper) BookCarrier(ctx context.Context, in ShipOrderInput, parents ShipOrderBookCarrierParents) (ShipOrderBookCarrierOutput, error) {
	if in.Priority == ShipOrderInputPrioritySameDay && in.Customer.Address.CountryCode != "NL" {
		return ShipOrderBookCarrierOutput{}, runtime.NonRetryable(errors.New("same-day only ships within NL"))
	}
	return ShipOrderBookCarrierOutput{
		Carrier:     ShipOrderBookCarrierOutputCarrierPostNl,
		TrackingIDs: make([]string, len(parents.Plan.Parcels)),
		PickupAt:    in.PlacedAt.Add(time.Hour),
		Costs:       map[string]float64{"base": 4.95},
	}, nil
}

func (Shipper) NotifyCustomer(ctx context.Context, in ShipOrderInput, parents ShipOrderNotifyCustomerParents) error {
	if !parents.WaitForPickup || parents.BookCarrier == nil {
		return nil
	}
	_ = *in.Customer.Email + parents.BookCarrier.TrackingIDs[0]
	return nil
}

func (Shipper) PageOnCall(ctx context.Context, in ShipOrderInput, failure runtime.Failure) error {
	return fmt.Errorf("order %s failed in %s: %s", in.OrderID, failure.Step, failure.Error)
}
`

const userTest = `package shipping

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

func order() ShipOrderInput {
	return ShipOrderInput{
		OrderID:  "o-1",
		PlacedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Priority: ShipOrderInputPriorityExpress,
		Customer: ShipOrderInputCustomer{Name: "Ada", Address: ShipOrderAddress{Street: "Main 1", City: "Utrecht", CountryCode: "NL"}},
		Items:    []ShipOrderInputItemsItem{{SKU: "sku-1", Quantity: 2}},
	}
}

func TestGeneratedSpecCompiles(t *testing.T) {
	def, err := runtime.Compile(ShipOrderSpec())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(order())
	if err != nil {
		t.Fatal(err)
	}
	if err := def.ValidateInput(raw); err != nil {
		t.Errorf("a typed input does not satisfy the input schema: %v", err)
	}
}

func TestShipmentWaitsForPickup(t *testing.T) {
	h := trellistest.New(t)
	client, err := RegisterShipOrder(h.Engine, Shipper{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(t.Context(), order())
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	res, err := client.Result(t.Context(), ref.ID)
	if err != nil || res.Status != runtime.RunRunning || res.Steps.WaitForPickup != runtime.TaskSleeping {
		t.Fatalf("before pickup: %+v, %v", res, err)
	}
	if res.BookCarrier == nil || res.BookCarrier.Carrier != ShipOrderBookCarrierOutputCarrierPostNl || len(res.BookCarrier.TrackingIDs) != 1 {
		t.Fatalf("booking = %+v", res.BookCarrier)
	}
	if booking, ok := trellistest.Output(h, ref.ID, ShipOrderRefs.BookCarrier()); !ok || booking.Carrier != res.BookCarrier.Carrier {
		t.Errorf("trellistest.Output(book-carrier) = %+v, %v; want the booking of the result", booking, ok)
	}
	h.Advance(4 * time.Hour)
	res, err = client.Wait(t.Context(), ref.ID)
	if err != nil || res.Steps.NotifyCustomer != runtime.TaskSkipped {
		t.Errorf("after pickup: %+v, %v; want notify-customer skipped (no email)", res, err)
	}
}
`
