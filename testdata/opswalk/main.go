// Command opswalk fills a Postgres schema with real runs to try the
// operations commands on (trellis runs, workers, queue, workflows) at
// scale: runs of the acceptance suite's ops workflow (five steps and a
// failure handler), one in 50 failing after its retries, labelled
// checkout, refund, signup, renewal or upgrade in turn (every failing one
// is a signup), over ten tenants. It triggers them with TriggerMany, runs
// them with one engine until none is running, and exits.
//
//	psql -c 'CREATE SCHEMA walk'
//	go run ./testdata/opswalk -database-url 'postgres://...&search_path=walk' -runs 250000
//	export TRELLIS_DATABASE_URL='postgres://...&search_path=walk'
//	trellis runs list -workflow ops -status failed -where 'input.label == "signup"'
//
// The failing step retries after 30 s and 90 s, so the last failures land
// two minutes after their first attempt; the failure handlers are queued
// when it exits (a worker started later runs them).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

type steps struct{}

func (steps) Prepare(context.Context, wf.OpsInput) (wf.OpsPrepareOutput, error) {
	return wf.OpsPrepareOutput{Token: "tok"}, nil
}

func (steps) Work(ctx context.Context, in wf.OpsInput, _ wf.OpsWorkParents) (wf.OpsWorkOutput, error) {
	info, _ := runtime.InfoFromContext(ctx)
	if in.Mode == wf.OpsInputModeFail {
		return wf.OpsWorkOutput{}, fmt.Errorf("payment gateway said no (attempt %d)", info.Attempt)
	}
	return wf.OpsWorkOutput{Attempt: int64(info.Attempt)}, nil
}

func (steps) Sidecar(context.Context, wf.OpsInput, wf.OpsSidecarParents) error { return nil }
func (steps) Report(context.Context, wf.OpsInput, wf.OpsReportParents) error   { return nil }
func (steps) Audit(context.Context, wf.OpsInput, wf.OpsAuditParents) error     { return nil }
func (steps) Alert(context.Context, wf.OpsInput, runtime.Failure) error        { return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "opswalk:", err)
		os.Exit(1)
	}
}

func run() error {
	url := flag.String("database-url", os.Getenv("TRELLIS_DATABASE_URL"), "Postgres connection `string`; its search_path picks the schema")
	n := flag.Int("runs", 250_000, "how many runs to create")
	flag.Parse()
	ctx := context.Background()
	pool, err := pgstore.Connect(ctx, *url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		return err
	}
	engine, err := runtime.New(runtime.Config{
		Store:  pgstore.New(pool),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	client, err := wf.RegisterOps(engine, steps{})
	if err != nil {
		return err
	}
	labels := []string{"checkout", "refund", "signup", "renewal", "upgrade"}
	start := time.Now()
	for i := 0; i < *n; i += 1000 {
		inputs := make([]wf.OpsInput, 0, 1000)
		for j := i; j < min(*n, i+1000); j++ {
			label := labels[j%len(labels)]
			mode := wf.OpsInputModeOk
			if j%50 == 7 {
				mode = wf.OpsInputModeFail
			}
			inputs = append(inputs, wf.OpsInput{Mode: mode, Label: &label})
		}
		if _, err := client.RunManyNoWait(ctx, inputs, runtime.WithTenant(fmt.Sprintf("tenant-%d", (i/1000)%10))); err != nil {
			return err
		}
	}
	fmt.Printf("created %d runs in %v\n", *n, time.Since(start).Round(time.Millisecond))
	if err := engine.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = engine.Stop(ctx) }()
	for {
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM trellis_runs WHERE status = 'RUNNING'`).Scan(&left); err != nil {
			return err
		}
		fmt.Printf("%v: %d runs running\n", time.Since(start).Round(time.Second), left)
		if left == 0 {
			return nil
		}
		time.Sleep(10 * time.Second)
	}
}
