// Command fulfilment runs a workflow that uses Trellis's dynamic steps:
// it charges every line item of an order (a map step, one run per item),
// ships the order through the shipment workflow (a child workflow, which
// books a courier and follows the parcels for two days in transit), then
// waits up to three days for the customer to confirm delivery (an event,
// sent by order id), and closes the order either way.
//
//	go run ./examples/fulfilment             # memory store, virtual clock
//	go run ./examples/fulfilment -postgres   # the same against Postgres
//
// The shop publishes an order-placed event for each of three orders; the
// workflow starts on those of the web shop (its startOn). Two orders run:
// the customer of the first confirms delivery when the parcels arrive;
// the second never does, so after three days its wait is skipped and the
// order is closed with a support ticket. The engine runs
// on a virtual clock: when nothing is left to do but wait, the clock
// jumps to the next durable timer, so the five days pass in well under a
// second. Such a clock moves every run of the store it runs on, so with
// -postgres the demo runs in a schema of its own,
// trellis_demo_fulfilment_<random>, which it creates, migrates and drops
// when it ends (on an error or Ctrl-C too; a demo killed with kill -9
// leaves it to the next demo to drop): the database's other runs, and its
// other schemas, are left alone.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/effectivelabs/trellis/examples/fulfilment/workflow"
	"github.com/effectivelabs/trellis/examples/internal/scratch"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

func main() {
	// Ctrl-C or SIGTERM ends the demo or the worker (gracefully).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "fulfilment:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("fulfilment", flag.ContinueOnError)
	usePG := fs.Bool("postgres", false, "use Postgres instead of the memory store")
	// The default is resolved after parsing, so that -h never prints a
	// password taken from $TRELLIS_DATABASE_URL.
	dbURL := fs.String("database-url", "", "Postgres connection string (default $TRELLIS_DATABASE_URL, else "+localDatabase+")")
	fs.SetOutput(out)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dbURL == "" {
		*dbURL = envOr("TRELLIS_DATABASE_URL", localDatabase)
	}
	if !*usePG {
		return demo(ctx, memstore.New(), out)
	}
	// The demo's virtual clock would move other runs: it runs in a schema
	// of its own, dropped when it ends.
	return scratch.Run(ctx, *dbURL, "fulfilment", out, func(st store.Store) error { return demo(ctx, st, out) })
}

// orders are the demo's two orders; the customer of the first confirms
// delivery.
var orders = []workflow.FulfilmentInput{
	{
		OrderID: "F-2001", Customer: "Ada",
		Address: workflow.FulfilmentInputAddress{Street: "1 Analytical Way", City: "London"},
		Lines: []workflow.FulfilmentInputLinesItem{
			{SKU: "KETTLE", Quantity: 1, UnitCents: 3_999},
			{SKU: "MUG", Quantity: 4, UnitCents: 850},
			{SKU: "GIFT-NOTE", Quantity: 1, UnitCents: 0}, // free: no charge
		},
	},
	{
		OrderID: "F-2002", Customer: "Grace",
		Address: workflow.FulfilmentInputAddress{Street: "2 Compiler Road", City: "Arlington"},
		Lines:   []workflow.FulfilmentInputLinesItem{{SKU: "LAMP", Quantity: 2, UnitCents: 2_450}},
	},
}

// placed are the order-placed events the shop publishes: the demo's two
// orders from the web shop, and one from the marketplace.
var placed = []struct {
	Channel string                   `json:"channel"`
	Order   workflow.FulfilmentInput `json:"order"`
}{
	{"web", orders[0]},
	{"web", orders[1]},
	{"marketplace", workflow.FulfilmentInput{
		OrderID: "M-3001", Customer: "Edsger",
		Address: workflow.FulfilmentInputAddress{Street: "3 Shortest Path", City: "Nuenen"},
		Lines:   []workflow.FulfilmentInputLinesItem{{SKU: "CHALK", Quantity: 1, UnitCents: 120}},
	}},
}

// demo runs the orders on a virtual clock, driven by hand.
func demo(ctx context.Context, st store.Store, out io.Writer) error {
	vc := clock.NewVirtual(time.Now().UTC().Truncate(time.Second))
	engine, err := runtime.New(runtime.Config{Store: st, Clock: vc})
	if err != nil {
		return err
	}
	// A driver runs the engine by hand: nothing happens until Wait.
	if _, err := runtime.NewDriver(engine); err != nil {
		return err
	}
	steps := &warehouse{out: out, clock: vc, start: vc.Now()}
	// The child workflow's steps run on the engine too: every engine that
	// runs fulfilment's ship step must know shipment.
	if _, err := workflow.RegisterShipment(engine, steps); err != nil {
		return err
	}
	client, err := workflow.RegisterFulfilment(engine, steps)
	if err != nil {
		return err
	}
	// The shop publishes order-placed for every order, knowing nothing of
	// the workflows: fulfilment starts on those of the web shop (its
	// startOn), with the order as its input. The event id makes a
	// publish safe to repeat.
	var refs []runtime.RunRef
	for _, o := range placed {
		payload, err := json.Marshal(o)
		if err != nil {
			return err
		}
		pub, err := engine.PublishEvent(ctx, "order-placed", "placed-"+o.Order.OrderID, payload)
		if err != nil {
			return err
		}
		started := pub.Started()
		if len(started) == 0 {
			fmt.Fprintf(out, "order %s from the %s starts nothing\n", o.Order.OrderID, o.Channel)
			continue
		}
		fmt.Fprintf(out, "started run %s for order %s (%d lines)\n", started[0], o.Order.OrderID, len(o.Order.Lines))
		refs = append(refs, runtime.RunRef{ID: started[0], Workflow: "fulfilment"})
	}
	confirmed := false
	for {
		// With a driver, Wait runs everything that can run now.
		running := 0
		for _, ref := range refs {
			if _, err := client.Wait(ctx, ref.ID); errors.Is(err, runtime.ErrStillRunning) {
				running++
			} else if err != nil {
				return err
			}
		}
		if running == 0 {
			break
		}
		first, err := client.Result(ctx, refs[0].ID)
		if err != nil {
			return err
		}
		if !confirmed && first.Steps.ConfirmDelivery == runtime.TaskWaiting {
			// The customer signs for the parcels: an event by order id,
			// which the workflow's wait for it receives.
			woken, err := client.SendDeliveryConfirmed(ctx, orders[0].OrderID, workflow.FulfilmentDeliveryConfirmedEvent{SignedBy: orders[0].Customer})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "  ... %s confirms delivery of %s (woke %d waiting step)\n", orders[0].Customer, orders[0].OrderID, woken)
			confirmed = true
			continue
		}
		next, ok, err := st.NextTimer(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("runs are stuck: nothing to run and no timer pending")
		}
		fmt.Fprintf(out, "  ... nothing to do but wait: fast-forwarding %s to the next durable timer\n", next.Sub(vc.Now()).Round(time.Second))
		vc.Set(next)
	}
	for i, ref := range refs {
		res, err := client.Wait(ctx, ref.ID)
		if err != nil {
			return err
		}
		ships, err := engine.ChildRuns(ctx, ref.ID, "ship")
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "order %s: run %s, %d line(s) charged, shipment run %s %s, confirm-delivery %s\n",
			orders[i].OrderID, res.Status, len(*res.ChargeLine), ships[0].ID, ships[0].Status, res.Steps.ConfirmDelivery)
	}
	return nil
}

// localDatabase is the database the demo uses when neither -database-url
// nor $TRELLIS_DATABASE_URL names one.
const localDatabase = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
