// Package flowcode is the code of the deploy test's workflow, version 1
// and version 2 (packages v1 and v2), and the main function of its worker
// binaries (oldworker, newworker). Each step's output says which code ran
// it (Code: "v1" or "v2") and in which binary, so that the test checks,
// run by run, that every task ran on code of its run's version.
package flowcode

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	v1 "github.com/effectivelabs/trellis/testdata/deploy/v1"
	v2 "github.com/effectivelabs/trellis/testdata/deploy/v2"
)

// The environment of a worker binary.
const (
	URLEnv    = "TRELLIS_DEPLOY_URL"    // the database
	SchemaEnv = "TRELLIS_DEPLOY_SCHEMA" // its schema
	NameEnv   = "TRELLIS_DEPLOY_WORKER" // the worker's id
	// FormerEnv, set to 1, has the new binary keep version 1 as a former
	// version.
	FormerEnv = "TRELLIS_DEPLOY_FORMER"
)

// Worker timing: fast enough for a test, heartbeats well inside the stale
// limit (the test's engine reads workers with the same StaleAfter).
const (
	Heartbeat  = 200 * time.Millisecond
	StaleAfter = 2 * time.Second
)

// sleep makes step b's first attempt take in.SleepMs, unless the worker
// stops first.
func sleep(ctx context.Context, ms *int64) error {
	info, _ := runtime.InfoFromContext(ctx)
	if ms == nil || *ms <= 0 || info.Retries > 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(*ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// V1 is version 1's code, in binary.
type V1 struct{ Binary string }

// A runs step a of version 1.
func (s V1) A(_ context.Context, _ v1.FlowInput) (v1.FlowAOutput, error) {
	return v1.FlowAOutput{Code: "v1", Binary: s.Binary}, nil
}

// B runs step b of version 1, sleeping first on its first attempt when
// the input asks.
func (s V1) B(ctx context.Context, in v1.FlowInput, _ v1.FlowBParents) (v1.FlowBOutput, error) {
	if err := sleep(ctx, in.SleepMs); err != nil {
		return v1.FlowBOutput{}, err
	}
	return v1.FlowBOutput{Code: "v1", Binary: s.Binary}, nil
}

// C runs step c of version 1, which reads b's output.
func (s V1) C(_ context.Context, in v1.FlowInput, p v1.FlowCParents) (v1.FlowCOutput, error) {
	if p.B.Code != "v1" {
		return v1.FlowCOutput{}, runtime.NonRetryable(errors.New("step c of version 1 read b's output of code " + p.B.Code))
	}
	return v1.FlowCOutput{Code: "v1", Binary: s.Binary, Total: in.N * 3}, nil
}

// V2 is version 2's code, in binary.
type V2 struct{ Binary string }

// A runs step a of version 2.
func (s V2) A(_ context.Context, _ v2.FlowInput) (v2.FlowAOutput, error) {
	return v2.FlowAOutput{Code: "v2", Binary: s.Binary}, nil
}

// B2 runs step b2 of version 2 (b renamed), sleeping first on its first
// attempt when the input asks.
func (s V2) B2(ctx context.Context, in v2.FlowInput, _ v2.FlowB2Parents) (v2.FlowB2Output, error) {
	if err := sleep(ctx, in.SleepMs); err != nil {
		return v2.FlowB2Output{}, err
	}
	return v2.FlowB2Output{Code: "v2", Binary: s.Binary}, nil
}

// C runs step c of version 2, which reads b2's output and returns its
// total as a string.
func (s V2) C(_ context.Context, in v2.FlowInput, p v2.FlowCParents) (v2.FlowCOutput, error) {
	if p.B2.Code != "v2" {
		return v2.FlowCOutput{}, runtime.NonRetryable(errors.New("step c of version 2 read b2's output of code " + p.B2.Code))
	}
	return v2.FlowCOutput{Code: "v2", Binary: s.Binary, Total: strconv.FormatInt(in.N*3, 10)}, nil
}

// Main runs a worker: an engine with what register registers, until
// SIGTERM (graceful) or SIGKILL. It returns the process's exit code.
func Main(register func(e *runtime.Engine, worker string) error) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	name := os.Getenv(NameEnv)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pid", os.Getpid(), "worker", name)
	cfg, err := pgxpool.ParseConfig(os.Getenv(URLEnv))
	if err != nil {
		log.Error("config", "error", err)
		return 1
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = os.Getenv(SchemaEnv)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Error("pool", "error", err)
		return 1
	}
	defer pool.Close()
	engine, err := runtime.New(runtime.Config{
		Store: pgstore.New(pool), WorkerID: name, Logger: log, Concurrency: 8,
		PollInterval: 200 * time.Millisecond, TimerInterval: 100 * time.Millisecond,
		HeartbeatInterval: Heartbeat, StaleAfter: StaleAfter, VersionRefresh: 200 * time.Millisecond,
	})
	if err != nil {
		log.Error("engine", "error", err)
		return 1
	}
	if err := register(engine, name); err != nil {
		log.Error("register", "error", err)
		return 1
	}
	if err := engine.Start(context.WithoutCancel(ctx)); err != nil {
		log.Error("start", "error", err)
		return 1
	}
	log.Info("serving", "versions", engine.ServedVersions())
	<-ctx.Done()
	grace, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := engine.Stop(grace); err != nil {
		log.Error("stop", "error", err)
		return 1
	}
	return 0
}
