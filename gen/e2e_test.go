package gen

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEndToEndInAUserModule does what a user does: a fresh module that
// requires trellis (replaced by this repository) declares a schema-rich
// workflow with a go:generate directive, implements the generated Steps
// interface, and checks that go generate, go vet and go test pass. The
// module's test compiles the generated spec with the runtime.
func TestEndToEndInAUserModule(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	workflow, err := os.ReadFile(filepath.Join(goldenRoot, "rich", "shipping.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/shop\n\ngo 1.24\n\nrequire github.com/effectivelabs/trellis v0.0.0\n\n" +
			"replace github.com/effectivelabs/trellis => " + repo + "\n",
		"go.sum":                 string(sums),
		"shipping/shipping.yaml": string(workflow),
		"shipping/doc.go":        userDoc,
		"shipping/steps.go":      userSteps,
		"shipping/steps_test.go": userTest,
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The user module resolves its own module graph, which may need go.mod
	// files this repository's build never downloaded (a fresh module
	// cache has none): the module proxy stays reachable, as for a user.
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOSUMDB=off")
	for _, args := range [][]string{
		{"generate", "./..."},
		{"vet", "./..."},
		{"test", "./..."},
	} {
		cmd := exec.Command(goTool, args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "shipping", "shipping.gen.go")); err != nil {
		t.Errorf("go generate wrote no shipping.gen.go: %v", err)
	}
}

// userDoc is the user's package doc with its go:generate directive. The
// directive is assembled so that no line of this file starts with it:
// go generate scans source text, strings included.
const userDoc = "// Package shipping ships orders.\npackage shipping\n\n" +
	"//go:" + "generate go run github.com/effectivelabs/trellis/cmd/trellis generate shipping.yaml\n"

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
)

func TestGeneratedSpecCompiles(t *testing.T) {
	def, err := runtime.Compile(ShipOrderSpec())
	if err != nil {
		t.Fatal(err)
	}
	in := ShipOrderInput{
		OrderID:  "o-1",
		PlacedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Priority: ShipOrderInputPriorityExpress,
		Customer: ShipOrderInputCustomer{Name: "Ada", Address: ShipOrderAddress{Street: "Main 1", City: "Utrecht", CountryCode: "NL"}},
		Items:    []ShipOrderInputItemsItem{{SKU: "sku-1", Quantity: 2}},
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := def.ValidateInput(raw); err != nil {
		t.Errorf("a typed input does not satisfy the input schema: %v", err)
	}
	if ShipOrderRefs.BookCarrier().Name() != "book-carrier" {
		t.Error("wrong step reference")
	}
}
`
