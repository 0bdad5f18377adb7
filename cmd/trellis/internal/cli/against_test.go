package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/gen"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// The old versions of the workflows deployed, whose runs are in
// progress: each run of orders has completed price and charge and waits
// for event paid, with ship and notify still to run.
const (
	shippingV1 = `name: shipping
input:
  type: object
  required: [id]
  properties:
    id: {type: string}
    receipt: {type: string}
steps:
  - name: book
    output:
      type: object
      required: [tracking]
      properties:
        tracking: {type: string}
`
	ordersV1 = `name: orders
input:
  type: object
  required: [id]
  properties:
    id: {type: string}
events:
  paid:
    type: object
    required: [amount]
    properties:
      amount: {type: integer}
steps:
  - name: price
    output:
      type: object
      required: [total]
      properties:
        total: {type: integer}
  - name: charge
    parents: [price]
    output:
      type: object
      required: [receipt, fee]
      properties:
        receipt: {type: string}
        fee: {type: integer}
  - name: wait-paid
    parents: [charge]
    waitFor: {event: paid}
  - name: ship
    parents: [wait-paid, charge]
    workflow:
      name: shipping
      input:
        id: input.id
        receipt: parents.charge.receipt
  - name: notify
    parents: [ship]
`
)

// edit returns s with each old replaced by new, failing when one is not
// found.
func edit(t *testing.T, s string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("edit: %q not found", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// inFlight deploys the old versions in a schema of their own, with two
// runs of orders in progress, one cancelled and a schedule created at
// run time, and a run of shipping queued; it returns the schema's
// connection string.
func inFlight(t *testing.T) string {
	t.Helper()
	pool, schema := pgtest.PoolWithSchema(t)
	h := trellistest.New(t, trellistest.WithStore(pgstore.New(pool)))
	dir := workspace(t, map[string]string{"orders.yaml": ordersV1, "shipping.yaml": shippingV1})
	g, err := gen.New()
	if err != nil {
		t.Fatal(err)
	}
	specOf := func(name string) *runtime.WorkflowSpec {
		path := filepath.Join(dir, name)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f := g.Check(path, src)
		if f.Spec() == nil {
			t.Fatalf("%s: %v", name, f.Problems)
		}
		return f.Spec()
	}
	out := func(doc string) runtime.StepFunc {
		return func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { return json.RawMessage(doc), nil }
	}
	shipping, err := h.Engine.Register(specOf("shipping.yaml"), runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"book": out(`{"tracking":"t1"}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	orders, err := h.Engine.Register(specOf("orders.yaml"), runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"price":  out(`{"total":10}`),
		"charge": out(`{"receipt":"r1","fee":1}`),
		"notify": out(`null`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var last runtime.RunRef
	for _, id := range []string{"a", "b", "c"} {
		if last, err = orders.Trigger(ctx, json.RawMessage(`{"id":"`+id+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := h.Engine.CancelRun(ctx, last.ID); err != nil || !ok {
		t.Fatalf("CancelRun = %v, %v", ok, err)
	}
	h.RunUntilIdle()
	if _, err := orders.CreateSchedule(ctx, "nightly", "0 3 * * *", json.RawMessage(`{"id":"s1"}`)); err != nil {
		t.Fatal(err)
	}
	// A run of shipping of its own, queued: a second version in progress.
	if _, err := shipping.Trigger(ctx, json.RawMessage(`{"id":"z"}`)); err != nil {
		t.Fatal(err)
	}
	return pgstore.WithSearchPath(pgtest.URL(), schema)
}

// TestLintAgainstRunsInProgress: each kind of breaking change that runs
// in progress notice fails lint -against, in file:line:col form, with
// how many runs notice it.
func TestLintAgainstRunsInProgress(t *testing.T) {
	url := inFlight(t)
	orders := func(pairs ...string) string { return edit(t, ordersV1, pairs...) }
	dir := workspace(t, map[string]string{
		"removed/orders.yaml":   orders("  - name: notify\n    parents: [ship]\n", ""),
		"removed/shipping.yaml": shippingV1,
		"renamed/orders.yaml":   orders("name: notify", "name: announce"),
		"renamed/shipping.yaml": shippingV1,
		"kind/orders.yaml":      orders("  - name: notify\n    parents: [ship]\n", "  - name: notify\n    parents: [ship]\n    sleep: 1h\n"),
		"kind/shipping.yaml":    shippingV1,
		"parents/orders.yaml":   orders("  - name: notify\n    parents: [ship]\n", "  - name: notify\n    parents: [ship, price]\n"),
		"parents/shipping.yaml": shippingV1,
		"output/orders.yaml":    orders("fee: {type: integer}", "fee: {type: string}"),
		"output/shipping.yaml":  shippingV1,
		"input/orders.yaml": orders("  required: [id]\n  properties:\n    id: {type: string}\n",
			"  required: [id, region]\n  properties:\n    id: {type: string}\n    region: {type: string}\n"),
		"input/shipping.yaml": shippingV1,
		"event/orders.yaml":   orders("amount: {type: integer}", "amount: {type: string}"),
		"event/shipping.yaml": shippingV1,
		// The child's contract: an input the step that starts it does
		// not build, then outputs its parent reads.
		"child/shipping.yaml":    edit(t, shippingV1, "required: [id]", "required: [id, carrier]", "    receipt: {type: string}\n", "    receipt: {type: string}\n    carrier: {type: string}\n"),
		"childout/orders.yaml":   ordersV1,
		"childout/shipping.yaml": edit(t, shippingV1, "tracking: {type: string}", "tracking: {type: integer}"),
	})
	env := map[string]string{"TRELLIS_DATABASE_URL": url, "NO_COLOR": "1"}
	for _, kind := range []string{"removed", "renamed", "kind", "parents", "output", "input", "event"} {
		t.Run(kind, func(t *testing.T) {
			transcript(t, "lint-against-"+kind+".txt", dir, env, []string{"lint", "-against", "env", kind})
		})
	}
	t.Run("child", func(t *testing.T) {
		transcript(t, "lint-against-child.txt", dir, env,
			[]string{"lint", "-against", "env", "child/shipping.yaml"},
			[]string{"lint", "-against", "env", "childout"})
	})
}

// TestLintAgainstPassesAndAccepts: a change that no run in progress
// notices passes (a step every run has finished removed, an optional
// property added to an output), an accepted change is a note, and the
// formats carry both.
func TestLintAgainstPassesAndAccepts(t *testing.T) {
	url := inFlight(t)
	dir := workspace(t, map[string]string{
		"compatible/orders.yaml": edit(t, ordersV1,
			"  - name: price\n    output:\n      type: object\n      required: [total]\n      properties:\n        total: {type: integer}\n", "",
			"    parents: [price]\n", "",
			"        fee: {type: integer}\n", "        fee: {type: integer}\n        note: {type: string}\n"),
		"compatible/shipping.yaml": shippingV1,
		"removed/orders.yaml":      edit(t, ordersV1, "  - name: notify\n    parents: [ship]\n", ""),
		"removed/shipping.yaml":    shippingV1,
	})
	env := map[string]string{"TRELLIS_DATABASE_URL": url, "NO_COLOR": "1"}
	transcript(t, "lint-against-ok.txt", dir, env,
		[]string{"lint", "-against", "env", "compatible"},
		[]string{"lint", "-against", "env", "-accept", "step-removed:orders.notify", "removed"},
		[]string{"lint", "-against", "env", "-accept", "step-removed", "-format", "json", "removed"},
		[]string{"lint", "-against", "env", "-accept", "step-removed:shipping", "-format", "github", "removed"},
		[]string{"lint", "-against", "env", "-accept", "step-renamed", "-format", "json", "removed"},
		// Versions are read by workflow name: orders, then shipping.
		[]string{"lint", "-against", "env", "-against-limit", "1", "compatible"},
	)
}

// TestLintAgainstErrors: a database that cannot be reached or has no
// Trellis schema, and -accept misused, are usage errors (exit 2), and no
// password is printed.
func TestLintAgainstErrors(t *testing.T) {
	_, schema := pgtest.PoolWithSchema(t)
	empty := pgstore.WithSearchPath(pgtest.URL(), schema+"_none")
	dir := workspace(t, map[string]string{"orders.yaml": ordersV1, "shipping.yaml": shippingV1})
	transcript(t, "lint-against-errors.txt", dir, map[string]string{"TRELLIS_DATABASE_URL": empty, "NO_COLOR": "1"},
		[]string{"lint", "-against", "postgres://trellis:hunter2@127.0.0.1:1/db?sslmode=disable&connect_timeout=5", "."},
		[]string{"lint", "-against", "env", "."},
		[]string{"lint", "-accept", "step-removed", "."},
		[]string{"lint", "-against", "env", "-accept", "step-gone", "."},
		[]string{"lint", "-against", "env", "-accept", "step-removed:", "."},
	)
}
