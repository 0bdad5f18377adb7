// Command orders runs the order-processing workflow of the Trellis spec:
// validate an order, charge or reject it, wait out a 24-hour fraud window,
// ship and finalize.
//
//	go run ./examples/orders                       # memory store, virtual clock
//	go run ./examples/orders -postgres             # the same against Postgres
//	go run ./examples/orders -postgres -worker     # a worker process (real time)
//	go run ./examples/orders -postgres -trigger 10 # start runs for the workers
//	go run ./examples/orders -postgres -worker -gateway-down # a worker whose charges fail
//	go run ./examples/orders -metrics :9090        # and serve Prometheus metrics
//
// By default it runs two orders to completion in well under a second: the
// engine runs on a virtual clock, and when nothing is left to do but wait
// (for the fraud window), the clock jumps to the next durable timer. That
// is how trellistest runs workflows in tests, too. Such a clock moves
// every run of the store it runs on, so with -postgres the demo runs in a
// schema of its own, trellis_demo_orders_<random>, which it creates,
// migrates and drops when it ends (on an error or Ctrl-C too; a demo
// killed with kill -9 leaves it to the next demo to drop): the database's
// other runs, and its other schemas, are left alone.
//
// With -worker it is a production-style worker on real time: start
// several, trigger runs from another shell, kill one with kill -9 and
// watch another take over its work. Ctrl-C stops a worker gracefully.
// Workers and -trigger share the schema the connection string names (the
// database's default one unless it sets search_path).
//
// With -metrics it serves the engine's OpenTelemetry metrics for
// Prometheus at /metrics on the address given (see metrics.go): a worker
// for as long as it runs, the demo until Ctrl-C once its runs are done.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/effectivelabs/trellis/examples/internal/scratch"
	"github.com/effectivelabs/trellis/examples/orders/workflow"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

func main() {
	// Ctrl-C or SIGTERM ends the demo or the worker (gracefully).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("orders", flag.ContinueOnError)
	usePG := fs.Bool("postgres", false, "use Postgres instead of the memory store")
	// The default is resolved after parsing, so that -h never prints a
	// password taken from $TRELLIS_DATABASE_URL.
	dbURL := fs.String("database-url", "", "Postgres connection string (default $TRELLIS_DATABASE_URL, else "+localDatabase+")")
	worker := fs.Bool("worker", false, "run as a worker on real time until interrupted (needs -postgres)")
	trigger := fs.Int("trigger", 0, "start this many runs and exit (needs -postgres)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://`addr`/metrics (e.g. :9090)")
	gatewayDown := fs.Bool("gateway-down", false, "with -worker: fail every charge, as if the payment gateway were down (to see failures in trellis dashboard, and retry them once a worker without it runs)")
	fs.SetOutput(out)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dbURL == "" {
		*dbURL = envOr("TRELLIS_DATABASE_URL", localDatabase)
	}
	var metrics *metricsServer
	if *metricsAddr != "" {
		var err error
		if metrics, err = startMetrics(*metricsAddr); err != nil {
			return err
		}
		defer metrics.Close(context.WithoutCancel(ctx))
		fmt.Fprintf(out, "serving metrics at %s\n", metrics.URL())
	}

	if !*usePG {
		if *worker || *trigger > 0 {
			return errors.New("-worker and -trigger share work between processes through Postgres: add -postgres")
		}
		if err := demo(ctx, memstore.New(), metrics, out); err != nil {
			return err
		}
		return serveMetrics(ctx, metrics, out)
	}
	if !*worker && *trigger == 0 {
		// The demo's virtual clock would move other runs: it runs in a
		// schema of its own, dropped when it ends.
		err := scratch.Run(ctx, *dbURL, "orders", out, func(st store.Store) error { return demo(ctx, st, metrics, out) })
		if err != nil {
			return err
		}
		return serveMetrics(ctx, metrics, out)
	}
	// Workers and triggers share the database's schema: they run on real
	// time.
	pool, err := pgstore.Connect(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		return err
	}
	if *worker {
		return work(ctx, pgstore.New(pool), metrics, *gatewayDown, out)
	}
	return triggerRuns(ctx, pgstore.New(pool), *trigger, out)
}

// serveMetrics serves metrics, if asked for, until Ctrl-C, once the
// demo's runs are done.
func serveMetrics(ctx context.Context, metrics *metricsServer, out io.Writer) error {
	if metrics != nil {
		fmt.Fprintf(out, "the runs are done; still serving metrics at %s until Ctrl-C\n", metrics.URL())
		<-ctx.Done()
	}
	return nil
}

// withMetrics sets cfg's MeterProvider to the metrics server's, if any.
func withMetrics(cfg runtime.Config, metrics *metricsServer) runtime.Config {
	if metrics != nil {
		cfg.MeterProvider = metrics.Provider
	}
	return cfg
}

// demo runs two orders, one valid and one over the limit, on a virtual
// clock.
func demo(ctx context.Context, st store.Store, metrics *metricsServer, out io.Writer) error {
	vc := clock.NewVirtual(time.Now().UTC().Truncate(time.Second))
	engine, err := runtime.New(withMetrics(runtime.Config{Store: st, Clock: vc}, metrics))
	if err != nil {
		return err
	}
	// A driver runs the engine by hand: nothing happens until Wait.
	if _, err := runtime.NewDriver(engine); err != nil {
		return err
	}
	orders, err := workflow.RegisterOrderProcessing(engine, &shop{out: out, clock: vc, start: vc.Now()})
	if err != nil {
		return err
	}
	inputs := []workflow.OrderProcessingInput{
		{OrderID: "A-1001", AmountCents: 4_200},
		{OrderID: "A-1002", AmountCents: 250_000},
	}
	var refs []runtime.RunRef
	for _, in := range inputs {
		// Tags say where an order came from: trellis runs list -tag
		// channel=web finds these runs (docs/concepts/tags.md).
		ref, err := orders.RunNoWait(ctx, in, runtime.WithTag("channel", "web"))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "started run %s for order %s\n", ref.ID, in.OrderID)
		refs = append(refs, ref)
	}
	for {
		// With a driver, Wait runs everything that can run now.
		running := 0
		for _, ref := range refs {
			_, err := orders.Wait(ctx, ref.ID)
			if errors.Is(err, runtime.ErrStillRunning) {
				running++
				continue
			}
			if err != nil {
				return err
			}
		}
		if running == 0 {
			break
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
		res, err := orders.Wait(ctx, ref.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "order %s: run %s\n", inputs[i].OrderID, res.Status)
	}
	return nil
}

// work runs a worker on real time until ctx ends, then stops gracefully.
func work(ctx context.Context, st store.Store, metrics *metricsServer, gatewayDown bool, out io.Writer) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	engine, err := runtime.New(withMetrics(runtime.Config{Store: st, Logger: log}, metrics))
	if err != nil {
		return err
	}
	wall := clock.Real()
	if _, err := workflow.RegisterOrderProcessing(engine, &shop{out: out, clock: wall, start: wall.Now(), gatewayDown: gatewayDown}); err != nil {
		return err
	}
	if err := engine.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(out, "worker %s running; Ctrl-C to stop\n", engine.WorkerID())
	<-ctx.Done()
	fmt.Fprintln(out, "stopping: finishing running steps (30s grace)")
	grace, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return engine.Stop(grace)
}

// triggerRuns starts n runs for workers to execute.
func triggerRuns(ctx context.Context, st store.Store, n int, out io.Writer) error {
	engine, err := runtime.New(runtime.Config{Store: st})
	if err != nil {
		return err
	}
	orders, err := workflow.NewOrderProcessingClient(engine)
	if err != nil {
		return err
	}
	for i := range n {
		in := workflow.OrderProcessingInput{OrderID: fmt.Sprintf("B-%d", i+1), AmountCents: int64(1_000 + 50_000*(i%3))}
		ref, err := orders.RunNoWait(ctx, in, runtime.WithTenant(fmt.Sprintf("shop-%d", i%2)), runtime.WithTag("channel", "api"))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "started run %s for order %s\n", ref.ID, in.OrderID)
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
