package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// Events that start runs: big-orders (testdata/acceptance/bigorders.yaml)
// starts on order-placed when its total is over 100, with an input built
// from the payload; receipts starts on every order-placed, with the
// payload as its input.

type bigOrderSteps struct{ calls calls }

func (s *bigOrderSteps) Review(_ context.Context, in wf.BigOrdersInput) (wf.BigOrdersReviewOutput, error) {
	s.calls.add("review " + in.OrderID)
	return wf.BigOrdersReviewOutput{Note: "reviewed " + in.OrderID}, nil
}

type receiptSteps struct{ calls calls }

func (s *receiptSteps) Mail(_ context.Context, in wf.ReceiptsInput) error {
	s.calls.add("mail " + in.ID)
	return nil
}

// outcome is what a publish did to one listener, without run ids.
type outcome struct {
	Workflow                    string
	Started, Existing, Filtered bool
	Refused                     bool
}

func outcomes(p runtime.Published) []outcome {
	out := make([]outcome, len(p.Listeners))
	for i, l := range p.Listeners {
		out[i] = outcome{Workflow: l.Workflow, Started: l.Run != runtime.RunID{} && !l.Existing, Existing: l.Existing, Filtered: l.Filtered, Refused: l.Refused != ""}
	}
	return out
}

func testStartEvents(t *testing.T, newH newHarness) {
	h := newH(t)
	ctx := t.Context()
	big, receipts := &bigOrderSteps{}, &receiptSteps{}
	bigClient, err := wf.RegisterBigOrders(h.Engine, big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wf.RegisterReceipts(h.Engine, receipts); err != nil {
		t.Fatal(err)
	}

	t.Run("a matching filter starts both workflows, with their inputs", func(t *testing.T) {
		pub, err := bigClient.PublishOrderPlaced(ctx, "evt-1", wf.BigOrdersOrderPlacedEvent{ID: "o-1", Total: 250, Customer: ptr("ada")})
		if err != nil {
			t.Fatal(err)
		}
		want := []outcome{{Workflow: "big-orders", Started: true}, {Workflow: "receipts", Started: true}}
		if diff := cmp.Diff(want, outcomes(pub)); diff != "" {
			t.Fatalf("publish (-want +got):\n%s", diff)
		}
		h.RunUntilIdle()
		res, err := bigClient.Result(ctx, pub.Listeners[0].Run)
		if err != nil || res.Status != runtime.RunCompleted || res.Review == nil || res.Review.Note != "reviewed o-1" {
			t.Fatalf("big-orders run = %+v, %v; want completed, reviewed o-1", res, err)
		}
		in := h.Result(pub.Listeners[1].Run)
		if in.Status != runtime.RunCompleted || receipts.calls.count("mail o-1") != 1 {
			t.Fatalf("receipts run = %s, mails %v; want completed, one mail for o-1", in.Status, receipts.calls.list())
		}
	})

	t.Run("a filter that is false starts nothing of its workflow", func(t *testing.T) {
		pub, err := bigClient.PublishOrderPlaced(ctx, "evt-2", wf.BigOrdersOrderPlacedEvent{ID: "o-2", Total: 40})
		if err != nil {
			t.Fatal(err)
		}
		want := []outcome{{Workflow: "big-orders", Filtered: true}, {Workflow: "receipts", Started: true}}
		if diff := cmp.Diff(want, outcomes(pub)); diff != "" {
			t.Fatalf("publish (-want +got):\n%s", diff)
		}
		h.RunUntilIdle()
		if big.calls.count("review o-2") != 0 || receipts.calls.count("mail o-2") != 1 {
			t.Fatalf("calls = %v; want a mail and no review for o-2", append(big.calls.list(), receipts.calls.list()...))
		}
	})

	t.Run("the same event id starts nothing new", func(t *testing.T) {
		first, err := bigClient.PublishOrderPlaced(ctx, "evt-3", wf.BigOrdersOrderPlacedEvent{ID: "o-3", Total: 500})
		if err != nil {
			t.Fatal(err)
		}
		again, err := bigClient.PublishOrderPlaced(ctx, "evt-3", wf.BigOrdersOrderPlacedEvent{ID: "o-3", Total: 500})
		if err != nil {
			t.Fatal(err)
		}
		want := []outcome{{Workflow: "big-orders", Existing: true}, {Workflow: "receipts", Existing: true}}
		if diff := cmp.Diff(want, outcomes(again)); diff != "" {
			t.Fatalf("second publish (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(first.Started(), again.Started()); diff != "" {
			t.Fatalf("the second publish reports other runs (-first +second):\n%s", diff)
		}
		// Another tenant's event of the same id is another event.
		other, err := bigClient.PublishOrderPlaced(ctx, "evt-3", wf.BigOrdersOrderPlacedEvent{ID: "o-3", Total: 500}, runtime.WithTenant("acme"))
		if err != nil {
			t.Fatal(err)
		}
		if len(other.Started()) != 2 || other.Listeners[0].Existing || h.Result(other.Listeners[0].Run).Tenant != "acme" {
			t.Fatalf("publish for tenant acme = %+v; want two new runs of acme", other)
		}
		h.RunUntilIdle()
		if n := big.calls.count("review o-3"); n != 2 {
			t.Fatalf("o-3 reviewed %d times; want 2 (once per tenant)", n)
		}
	})

	t.Run("a payload the schema refuses starts nothing", func(t *testing.T) {
		pub, err := h.Engine.PublishEvent(ctx, "order-placed", "evt-4", json.RawMessage(`{"id": "o-4", "total": "lots"}`))
		var pe *runtime.PublishError
		if !errors.As(err, &pe) || len(pe.Refused) != 2 {
			t.Fatalf("publish = %v; want a *PublishError with both listeners", err)
		}
		if len(pub.Started()) != 0 {
			t.Fatalf("started %v; want none", pub.Started())
		}
		want := []outcome{{Workflow: "big-orders", Refused: true}, {Workflow: "receipts", Refused: true}}
		if diff := cmp.Diff(want, outcomes(pub)); diff != "" {
			t.Fatalf("publish (-want +got):\n%s", diff)
		}
	})

	t.Run("a listener that refuses the input it builds does not stop the others", func(t *testing.T) {
		// big-orders requires a non-empty orderId; receipts takes any id.
		pub, err := h.Engine.PublishEvent(ctx, "order-placed", "evt-5", json.RawMessage(`{"id": "", "total": 900}`))
		var pe *runtime.PublishError
		if !errors.As(err, &pe) || len(pe.Refused) != 1 || pe.Refused[0].Workflow != "big-orders" {
			t.Fatalf("publish = %v; want big-orders refused", err)
		}
		want := []outcome{{Workflow: "big-orders", Refused: true}, {Workflow: "receipts", Started: true}}
		if diff := cmp.Diff(want, outcomes(pub)); diff != "" {
			t.Fatalf("publish (-want +got):\n%s", diff)
		}
	})

	t.Run("a process without the workflows' code starts them from their stored versions", func(t *testing.T) {
		publisher, err := runtime.New(runtime.Config{Store: h.Store, Clock: h.Clock, WorkerID: "publisher"})
		if err != nil {
			t.Fatal(err)
		}
		pub, err := publisher.PublishEvent(ctx, "order-placed", "evt-6", json.RawMessage(`{"id": "o-6", "total": 120}`))
		if err != nil {
			t.Fatal(err)
		}
		want := []outcome{{Workflow: "big-orders", Started: true}, {Workflow: "receipts", Started: true}}
		if diff := cmp.Diff(want, outcomes(pub)); diff != "" {
			t.Fatalf("publish (-want +got):\n%s", diff)
		}
		h.RunUntilIdle()
		if big.calls.count("review o-6") != 1 || receipts.calls.count("mail o-6") != 1 {
			t.Fatalf("calls = %v; want o-6 reviewed and mailed", append(big.calls.list(), receipts.calls.list()...))
		}
	})

	t.Run("an event no workflow starts on starts nothing", func(t *testing.T) {
		pub, err := h.Engine.PublishEvent(ctx, "order-shipped", "", json.RawMessage(`{}`))
		if err != nil || len(pub.Listeners) != 0 {
			t.Fatalf("publish = %+v, %v; want no listener", pub, err)
		}
	})
}

// A publish refuses, before anything, an event id too long for the runs'
// idempotency keys, and a payload over the size limit.
func TestPublishLimits(t *testing.T) {
	h := trellistest.New(t)
	if _, err := wf.RegisterReceipts(h.Engine, &receiptSteps{}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var le *runtime.LimitError
	_, err := h.Engine.PublishEvent(ctx, "order-placed", strings.Repeat("x", 10_000), json.RawMessage(`{"id": "o", "total": 1}`))
	if !errors.As(err, &le) || le.Limit != "MaxIdempotencyKeyBytes" {
		t.Fatalf("publish with a long id = %v; want a *LimitError on MaxIdempotencyKeyBytes", err)
	}
	big := json.RawMessage(`{"id": "` + strings.Repeat("x", 2<<20) + `", "total": 1}`)
	if _, err := h.Engine.PublishEvent(ctx, "order-placed", "e", big); !errors.As(err, &le) || le.Limit != "MaxEventBytes" {
		t.Fatalf("publish of a big payload = %v; want a *LimitError on MaxEventBytes", err)
	}
	if _, err := h.Engine.PublishEvent(ctx, "order-placed", "e", json.RawMessage(`{}`), runtime.WithPriority(3)); err == nil {
		t.Fatal("a publish with WithPriority was accepted")
	}
	if n := h.RunUntilIdle(); n != 0 {
		t.Fatalf("refused publishes ran %d tasks", n)
	}
}

// A started worker stores the workflows it registered that events start,
// so that a process without their code, publishing before any of their
// runs exists, starts them.
func TestStartedWorkerStoresItsListeners(t *testing.T) {
	st := memstore.New()
	vc := clock.NewVirtual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	worker, err := runtime.New(runtime.Config{Store: st, Clock: vc, WorkerID: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wf.RegisterReceipts(worker, &receiptSteps{}); err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := worker.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	publisher, err := runtime.New(runtime.Config{Store: st, Clock: vc, WorkerID: "publisher"})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := publisher.PublishEvent(t.Context(), "order-placed", "e-1", json.RawMessage(`{"id": "o-1", "total": 5}`))
	if err != nil || len(pub.Started()) != 1 || pub.Listeners[0].Workflow != "receipts" {
		t.Fatalf("publish = %+v, %v; want a run of receipts", pub, err)
	}
}

// Each run a publish starts has a trigger span, in the publisher's trace,
// and is counted as started, by workflow.
func TestPublishTelemetry(t *testing.T) {
	tel := newTelemetry(t)
	h := trellistest.New(t, trellistest.WithConfig(tel.configure))
	if _, err := wf.RegisterBigOrders(h.Engine, &bigOrderSteps{}); err != nil {
		t.Fatal(err)
	}
	if _, err := wf.RegisterReceipts(h.Engine, &receiptSteps{}); err != nil {
		t.Fatal(err)
	}
	ctx, request := tel.tp.Tracer("test").Start(t.Context(), "POST /orders")
	pub, err := h.Engine.PublishEvent(ctx, "order-placed", "e-1", json.RawMessage(`{"id": "o-1", "total": 500}`), runtime.WithTenant("acme"))
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	spans := tel.spans.GetSpans()
	for _, l := range pub.Listeners {
		found := findSpans(spans, "trellis.trigger "+l.Workflow)
		if len(found) != 1 {
			t.Fatalf("spans %v; want one trellis.trigger %s", spanNames(spans), l.Workflow)
		}
		if found[0].SpanContext.TraceID() != request.SpanContext().TraceID() {
			t.Errorf("the trigger span of %s is not in the publisher's trace", l.Workflow)
		}
		checkSpanAttrs(t, found[0], map[string]string{"trellis.run.id": l.Run.String(), "trellis.tenant.id": "acme"})
	}
	ms := tel.metrics(t)
	for _, name := range []string{"big-orders", "receipts"} {
		if got := ms.sum(t, "trellis.run.started", "trellis.workflow.name="+name); got != 1 {
			t.Errorf("runs of %s started = %d, want 1", name, got)
		}
	}
}

// A startOn whose input is one expression, a map literal here, starts
// the run with its value as the input; a value the input schema refuses
// is refused.
func TestStartOnWholeInput(t *testing.T) {
	h := trellistest.New(t)
	spec := &runtime.WorkflowSpec{
		Name:        "tagged",
		InputSchema: `{"type":"object","required":["orderId"],"properties":{"orderId":{"type":"string","minLength":3},"big":{"type":"boolean"}}}`,
		Events:      []runtime.EventSpec{{Name: "order-placed", Schema: `{"type":"object","properties":{"id":{"type":"string"},"total":{"type":"integer"}}}`}},
		StartOn:     []runtime.StartOnSpec{{Event: "order-placed", InputExpr: "{'orderId': 'o-' + payload.id, 'big': payload.total > 100}"}},
		Steps:       []runtime.StepSpec{{Name: "s"}},
	}
	if _, err := h.Engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"s": runtime.RootStepNoOutput(func(context.Context, json.RawMessage) error { return nil }),
	}}); err != nil {
		t.Fatal(err)
	}
	pub, err := h.Engine.PublishEvent(t.Context(), "order-placed", "", json.RawMessage(`{"id": "7", "total": 500}`))
	if err != nil || len(pub.Started()) != 1 {
		t.Fatalf("publish = %+v, %v", pub, err)
	}
	run, err := h.Store.GetRun(t.Context(), pub.Started()[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(run.Input); got != `{"big":true,"orderId":"o-7"}` {
		t.Errorf("input = %s", got)
	}
	// orderId "o-" is too short for the input schema.
	pub, err = h.Engine.PublishEvent(t.Context(), "order-placed", "", json.RawMessage(`{"id": "", "total": 1}`))
	var pe *runtime.PublishError
	if !errors.As(err, &pe) || !strings.Contains(pub.Listeners[0].Refused, "input.orderId") {
		t.Fatalf("publish = %+v, %v; want the input refused", pub, err)
	}
}
