// Command newworker is the deploy test's worker binary after the deploy:
// it registers version 2 of the workflow and, with TRELLIS_DEPLOY_FORMER=1,
// keeps version 1 as a former version, with its code, so that it finishes
// the runs of version 1 in flight.
package main

import (
	"os"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/testdata/deploy/flowcode"
	v1 "github.com/effectivelabs/trellis/testdata/deploy/v1"
	v2 "github.com/effectivelabs/trellis/testdata/deploy/v2"
)

func main() {
	os.Exit(flowcode.Main(func(e *runtime.Engine, worker string) error {
		if _, err := v2.RegisterFlow(e, flowcode.V2{Binary: "new"}); err != nil {
			return err
		}
		if os.Getenv(flowcode.FormerEnv) == "1" {
			return v1.RegisterFlowFormer(e, flowcode.V1{Binary: "new"})
		}
		return nil
	}))
}
