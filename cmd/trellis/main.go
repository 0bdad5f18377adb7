// Command trellis is the Trellis command-line tool: it lints workflow
// files, generates their Go code, draws their graphs (graph), applies the
// Postgres schema (migrate), shows and steers runs (runs, workers, queue,
// workflows) and measures the engine (bench); trellis version says which
// Trellis it was built from. Run trellis help for the commands.
//
// Use it from go generate as a tool of your module (Go 1.24 or newer):
//
//	go get -tool github.com/effectivelabs/trellis/cmd/trellis
//
// and, beside the workflow file,
//
//	//go:generate go tool trellis generate orders.yaml
//
// or install it on your PATH:
//
//	go install github.com/effectivelabs/trellis/cmd/trellis@latest
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/effectivelabs/trellis/cmd/trellis/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
