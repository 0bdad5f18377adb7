package clock_test

import (
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/runtime/clock"
)

// A virtual clock moves only when told to: timers due on the way fire in
// order, so a day of sleeps and backoffs passes in microseconds, the same
// way every time. Tests give one to the engine (runtime.Config.Clock);
// the trellistest harness does.
func ExampleVirtual() {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	vc := clock.NewVirtual(start)
	vc.AfterFunc(24*time.Hour, func() { fmt.Println("the fraud window ends at", vc.Now().Sub(start)) })
	vc.AfterFunc(time.Second, func() { fmt.Println("a retry is due at", vc.Now().Sub(start)) })

	due, _ := vc.NextDue()
	fmt.Println("next due:", due.Sub(start))
	vc.Advance(48 * time.Hour)
	fmt.Println("now:", vc.Now().Sub(start))
	// Output:
	// next due: 1s
	// a retry is due at 1s
	// the fraud window ends at 24h0m0s
	// now: 48h0m0s
}
