package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	"github.com/effectivelabs/trellis/schema/spec"
)

// vaultSpec marks a card number, a receipt's token and an event's one-time
// password sensitive (runtime.SensitiveKeyword).
func vaultSpec() *runtime.WorkflowSpec {
	return &runtime.WorkflowSpec{
		Name: "vault",
		InputSchema: `{"type":"object","properties":{"email":{"type":"string"},
			"cardNumber":{"type":"string","x-trellis-sensitive":true}}}`,
		Steps: []spec.Step{
			{Name: "charge", OutputSchema: `{"type":"object","properties":{"receipt":{"type":"object",
				"properties":{"id":{"type":"string"},"token":{"type":"string","x-trellis-sensitive":true}}}}}`},
			{Name: "approval", Parents: []string{"charge"}, WaitFor: &spec.WaitFor{Event: "approve"}},
		},
		Events: []spec.Event{{Name: "approve", Schema: `{"type":"object","properties":{"otp":{"type":"string","x-trellis-sensitive":true},"by":{"type":"string"}}}`}},
	}
}

func TestDashboardRedactsSensitiveValues(t *testing.T) {
	stores := map[string]func(t *testing.T) []trellistest.Option{
		"memory": func(*testing.T) []trellistest.Option { return nil },
		"postgres": func(t *testing.T) []trellistest.Option {
			pool, _ := pgtest.PoolWithSchema(t)
			return []trellistest.Option{trellistest.WithStore(pgstore.New(pool))}
		},
	}
	for name, opts := range stores {
		t.Run(name, func(t *testing.T) {
			b := setup(t, dashboard.Options{}, opts(t)...)
			var given atomic.Value
			w, err := b.h.Engine.Register(vaultSpec(), runtime.Handlers{Steps: map[string]runtime.StepFunc{
				"charge": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
					var in struct{ CardNumber string }
					if err := json.Unmarshal(req.Input, &in); err != nil {
						return nil, err
					}
					given.Store(in.CardNumber)
					return json.Marshal(map[string]any{"receipt": map[string]string{"id": "r-1", "token": "tok_" + in.CardNumber}})
				},
			}})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := w.Trigger(t.Context(), json.RawMessage(`{"email":"ada@example.com","cardNumber":"4111111111111111"}`))
			if err != nil {
				t.Fatal(err)
			}
			b.h.RunUntilIdle()
			if _, err := w.Signal(t.Context(), ref.ID, "approve", json.RawMessage(`{"otp":"990077","by":"ops"}`)); err != nil {
				t.Fatal(err)
			}
			b.h.RunUntilIdle()
			if st := b.h.Result(ref.ID).Status; st != runtime.RunCompleted {
				t.Fatalf("run is %s, want COMPLETED", st)
			}
			if got, _ := given.Load().(string); got != "4111111111111111" {
				t.Errorf("charge was given card number %q, want the real one", got)
			}

			id := ref.ID.String()
			for path, shown := range map[string][]string{
				"/runs/" + id:                                 {"ada@example.com", "r-1", "ops"},
				"/runs/" + id + "/input.json":                 {"ada@example.com"},
				"/runs/" + id + "/steps/charge/output.json":   {"r-1"},
				"/runs/" + id + "/steps/approval/output.json": {"ops"},
			} {
				body := b.page(path, http.StatusOK)
				for _, secret := range []string{"4111111111111111", "990077"} {
					if strings.Contains(body, secret) {
						t.Errorf("GET %s shows the sensitive %q", path, secret)
					}
				}
				for _, want := range append(shown, runtime.Redacted) {
					if !strings.Contains(body, want) && !strings.Contains(body, strings.ReplaceAll(want, `"`, "&#34;")) {
						t.Errorf("GET %s does not show %q", path, want)
					}
				}
			}

			// A where filter may not read a sensitive field.
			body := b.page("/runs?workflow=vault&where="+url.QueryEscape(`input.cardNumber.startsWith("4")`), http.StatusBadRequest)
			if !strings.Contains(body, "marked x-trellis-sensitive") {
				t.Errorf("a where filter on cardNumber is not refused:\n%s", body)
			}
			if body := b.page("/runs?workflow=vault&where="+url.QueryEscape(`input.email == "ada@example.com"`), http.StatusOK); !strings.Contains(body, id) {
				t.Errorf("a where filter on email does not list the run")
			}
		})
	}
}
