package graph_test

import (
	"fmt"
	"time"

	"github.com/effectivelabs/trellis/schema/spec"
	"github.com/effectivelabs/trellis/schema/spec/graph"
)

// A workflow drawn as Mermaid, with the status of each task of a run: the
// sleep is a stadium, the failure handler hangs off a "run fails" note,
// and each status is a class a page can restyle.
func ExampleRender() {
	w := &spec.Workflow{
		Name: "welcome",
		Steps: []spec.Step{
			{Name: "send-email", Retry: spec.RetryPolicy{MaxRetries: 3, InitialDelay: time.Second, BackoffFactor: 2, MaxDelay: time.Minute}, Timeout: 30 * time.Second},
			{Name: "wait", Parents: []string{"send-email"}, Sleep: 24 * time.Hour},
			{Name: "nudge", Parents: []string{"wait"}, SkipIf: []string{"input.activated"}},
		},
		OnFailure: &spec.OnFailure{Name: "alert"},
	}
	out, err := graph.Render(w, graph.Mermaid, graph.Options{Status: map[string]string{
		"send-email": "COMPLETED",
		"wait":       "SLEEPING",
	}})
	if err != nil {
		panic(err)
	}
	fmt.Print(string(out))
	// Output:
	// flowchart TD
	//     step_send_email["send-email<br/>retry ×3, timeout 30s"]
	//     step_wait(["wait<br/>sleep 24h"])
	//     step_nudge["nudge<br/>skip if input.activated"]
	//     run_fails>"run fails"]
	//     on_failure[["alert<br/>failure handler, runs once"]]
	//     step_send_email --> step_wait
	//     step_wait --> step_nudge
	//     run_fails -.-> on_failure
	//     classDef status_completed fill:#b2f2bb,stroke:#2f9e44,color:#000
	//     class step_send_email status_completed
	//     classDef status_sleeping fill:#e5dbff,stroke:#7048e8,color:#000
	//     class step_wait status_sleeping
}
