// Command oldworker is the deploy test's worker binary before the deploy:
// it registers version 1 of the workflow.
package main

import (
	"os"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/testdata/deploy/flowcode"
	v1 "github.com/effectivelabs/trellis/testdata/deploy/v1"
)

func main() {
	os.Exit(flowcode.Main(func(e *runtime.Engine, worker string) error {
		_, err := v1.RegisterFlow(e, flowcode.V1{Binary: "old"})
		return err
	}))
}
