package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// A publish with a key also wakes waits: receipts starts on order-placed
// (testdata/acceptance/receipts.yaml); order-followup's step placed waits
// for order-placed keyed by the order's id (followup.yaml), with a schema
// of its own that requires a customer.

type followupSteps struct{ calls calls }

func (s *followupSteps) Thank(_ context.Context, in wf.OrderFollowupInput, p wf.OrderFollowupThankParents) (wf.OrderFollowupThankOutput, error) {
	s.calls.add("thank " + p.Placed.Customer + " for " + in.OrderID)
	return wf.OrderFollowupThankOutput{Note: "thanked " + p.Placed.Customer}, nil
}

// reached is what a publish did to one listener, without run ids.
type reached struct {
	Workflow          string
	Started, Existing bool
	Refused           bool
	Delivered         *runtime.Delivered
}

func reachedOf(p runtime.Published) []reached {
	out := make([]reached, len(p.Listeners))
	for i, l := range p.Listeners {
		out[i] = reached{Workflow: l.Workflow, Started: l.Run != runtime.RunID{} && !l.Existing, Existing: l.Existing,
			Refused: l.Refused != "", Delivered: l.Delivered}
	}
	return out
}

func testPublishWakesWaits(t *testing.T, newH newHarness) {
	h := newH(t)
	ctx := t.Context()
	mails, thanks := &receiptSteps{}, &followupSteps{}
	receipts, err := wf.RegisterReceipts(h.Engine, mails)
	if err != nil {
		t.Fatal(err)
	}
	followups, err := wf.RegisterOrderFollowup(h.Engine, thanks)
	if err != nil {
		t.Fatal(err)
	}
	follow := func(order string) runtime.RunID {
		t.Helper()
		ref, err := followups.RunNoWait(ctx, wf.OrderFollowupInput{OrderID: order})
		if err != nil {
			t.Fatal(err)
		}
		h.RunUntilIdle()
		if got := h.Steps(ref.ID)["placed"]; got != runtime.TaskWaiting {
			t.Fatalf("step placed is %s, want WAITING", got)
		}
		return ref.ID
	}
	placed := func(order, customer string) wf.ReceiptsOrderPlacedEvent {
		return wf.ReceiptsOrderPlacedEvent{ID: order, Total: 30, Customer: &customer}
	}

	first := follow("o-1")
	h.Advance(time.Second)

	t.Run("one publish starts a run and completes a wait", func(t *testing.T) {
		pub, err := receipts.PublishOrderPlaced(ctx, "evt-1", placed("o-1", "ada"), runtime.WithEventKey("o-1"))
		if err != nil {
			t.Fatal(err)
		}
		want := []reached{
			{Workflow: "order-followup", Delivered: &runtime.Delivered{Woken: 1}},
			{Workflow: "receipts", Started: true},
		}
		if diff := cmp.Diff(want, reachedOf(pub)); diff != "" {
			t.Fatalf("publish (-want +got):\n%s", diff)
		}
		if pub.Key != "o-1" || pub.Woken() != 1 {
			t.Errorf("published key %q, woke %d; want o-1, 1", pub.Key, pub.Woken())
		}
		h.RunUntilIdle()
		res, err := followups.Result(ctx, first)
		if err != nil || res.Status != runtime.RunCompleted || res.Thank == nil || res.Thank.Note != "thanked ada" {
			t.Fatalf("order-followup run = %+v, %v; want completed, thanked ada", res, err)
		}
		if got := h.Result(pub.Started()[0]).Status; got != runtime.RunCompleted || mails.calls.count("mail o-1") != 1 {
			t.Fatalf("receipts run = %s, mails %v; want completed, one mail for o-1", got, mails.calls.list())
		}
	})

	t.Run("the same event id again starts and delivers nothing", func(t *testing.T) {
		// A run created after the first publish: the event came before
		// it, so only a new delivery would reach it.
		h.Advance(time.Second)
		later := follow("o-1")
		h.Advance(time.Second)
		pub, err := receipts.PublishOrderPlaced(ctx, "evt-1", placed("o-1", "ada"), runtime.WithEventKey("o-1"))
		if err != nil {
			t.Fatal(err)
		}
		want := []reached{
			{Workflow: "order-followup", Delivered: &runtime.Delivered{Repeat: true}},
			{Workflow: "receipts", Existing: true},
		}
		if diff := cmp.Diff(want, reachedOf(pub)); diff != "" {
			t.Fatalf("second publish (-want +got):\n%s", diff)
		}
		h.RunUntilIdle()
		if got := h.Steps(later)["placed"]; got != runtime.TaskWaiting {
			t.Errorf("the later run's wait is %s, want still WAITING", got)
		}
		if n, m := thanks.calls.count("thank ada for o-1"), mails.calls.count("mail o-1"); n != 1 || m != 1 {
			t.Errorf("thanked %d times, mailed %d; want once each", n, m)
		}
		// A new event id is a new event: it reaches the later run.
		pub, err = receipts.PublishOrderPlaced(ctx, "evt-2", placed("o-1", "bob"), runtime.WithEventKey("o-1"))
		if err != nil || pub.Woken() != 1 {
			t.Fatalf("publish of evt-2 = %+v, %v; want one wait woken", pub, err)
		}
		h.RunUntilIdle()
		if got := h.Result(later).Status; got != runtime.RunCompleted || thanks.calls.count("thank bob for o-1") != 1 {
			t.Fatalf("later run = %s, thanks %v; want completed, bob thanked", got, thanks.calls.list())
		}
	})

	t.Run("without a key a publish reaches no wait", func(t *testing.T) {
		waiting := follow("o-3")
		pub, err := receipts.PublishOrderPlaced(ctx, "evt-3", placed("o-3", "cy"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]reached{{Workflow: "receipts", Started: true}}, reachedOf(pub)); diff != "" {
			t.Fatalf("publish (-want +got):\n%s", diff)
		}
		h.RunUntilIdle()
		if got := h.Steps(waiting)["placed"]; got != runtime.TaskWaiting {
			t.Errorf("wait is %s, want WAITING", got)
		}
	})

	t.Run("each workflow checks the payload against its own schema", func(t *testing.T) {
		// order-followup requires a customer; receipts does not.
		pub, err := h.Engine.PublishEvent(ctx, "order-placed", "evt-4", json.RawMessage(`{"id": "o-3", "total": 5}`), runtime.WithEventKey("o-3"))
		var pe *runtime.PublishError
		if !errors.As(err, &pe) || len(pe.Refused) != 1 || !strings.Contains(pe.Refused[0].Refused, "payload.customer") {
			t.Fatalf("publish = %v; want order-followup refusing a payload without a customer", err)
		}
		want := []reached{{Workflow: "order-followup", Refused: true}, {Workflow: "receipts", Started: true}}
		if diff := cmp.Diff(want, reachedOf(pub)); diff != "" {
			t.Fatalf("publish (-want +got):\n%s", diff)
		}
	})

	t.Run("a process without the workflows' code delivers too", func(t *testing.T) {
		waiting := follow("o-5")
		publisher, err := runtime.New(runtime.Config{Store: h.Store, Clock: h.Clock, WorkerID: "publisher"})
		if err != nil {
			t.Fatal(err)
		}
		pub, err := publisher.PublishEvent(ctx, "order-placed", "evt-5", json.RawMessage(`{"id": "o-5", "total": 5, "customer": "di"}`),
			runtime.WithEventKey("o-5"))
		if err != nil {
			t.Fatal(err)
		}
		want := []reached{{Workflow: "order-followup", Delivered: &runtime.Delivered{Woken: 1}}, {Workflow: "receipts", Started: true}}
		if diff := cmp.Diff(want, reachedOf(pub)); diff != "" {
			t.Fatalf("publish (-want +got):\n%s", diff)
		}
		h.RunUntilIdle()
		if got := h.Result(waiting).Status; got != runtime.RunCompleted {
			t.Fatalf("run = %s, want completed", got)
		}
	})

	t.Run("only a publish takes an event key", func(t *testing.T) {
		if _, err := followups.RunNoWait(ctx, wf.OrderFollowupInput{OrderID: "o-6"}, runtime.WithEventKey("o-6")); err == nil || !strings.Contains(err.Error(), "WithEventKey") {
			t.Errorf("a trigger with WithEventKey = %v; want it refused", err)
		}
		if _, err := followups.SendOrderPlaced(ctx, "o-6", wf.OrderFollowupOrderPlacedEvent{ID: "o-6", Customer: "x"}, runtime.WithEventKey("o-6")); err == nil {
			t.Error("a Send with WithEventKey was accepted")
		}
	})
}

// failingSends fails the next fail calls to SendEvents, before they take
// effect, with an error that is not transient: a publish that fails
// between creating its runs and delivering its event.
type failingSends struct {
	store.Store
	fail atomic.Int32
}

func (f *failingSends) SendEvents(ctx context.Context, p store.SendEvents) ([]store.SentEvent, error) {
	if take(&f.fail) {
		return nil, errors.New("test: the database went away")
	}
	return f.Store.SendEvents(ctx, p)
}

// Without a transaction, a publish that fails after starting its runs
// says so, and publishing it again with the same id delivers the event
// once and finds the runs.
func TestPublishFailingBetweenRunsAndDelivery(t *testing.T) {
	st := &failingSends{Store: memstore.New()}
	h := trellistest.New(t, trellistest.WithStore(st))
	ctx := t.Context()
	mails, thanks := &receiptSteps{}, &followupSteps{}
	if _, err := wf.RegisterReceipts(h.Engine, mails); err != nil {
		t.Fatal(err)
	}
	followups, err := wf.RegisterOrderFollowup(h.Engine, thanks)
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := followups.RunNoWait(ctx, wf.OrderFollowupInput{OrderID: "o-1"})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	h.Advance(time.Second)
	payload := json.RawMessage(`{"id": "o-1", "total": 5, "customer": "ada"}`)

	st.fail.Store(1)
	pub, err := h.Engine.PublishEvent(ctx, "order-placed", "evt-1", payload, runtime.WithEventKey("o-1"))
	if err == nil || !strings.Contains(err.Error(), "publish it again with the same id") {
		t.Fatalf("publish = %v; want an error saying the runs were started", err)
	}
	if len(pub.Started()) != 1 || pub.Woken() != 0 {
		t.Fatalf("failed publish = %+v; want the run it started, and no wait woken", pub)
	}
	again, err := h.Engine.PublishEvent(ctx, "order-placed", "evt-1", payload, runtime.WithEventKey("o-1"))
	if err != nil {
		t.Fatal(err)
	}
	want := []reached{{Workflow: "order-followup", Delivered: &runtime.Delivered{Woken: 1}}, {Workflow: "receipts", Existing: true}}
	if diff := cmp.Diff(want, reachedOf(again)); diff != "" {
		t.Fatalf("publish again (-want +got):\n%s", diff)
	}
	h.RunUntilIdle()
	if got := h.Result(waiting.ID).Status; got != runtime.RunCompleted || mails.calls.count("mail o-1") != 1 || thanks.calls.count("thank ada for o-1") != 1 {
		t.Fatalf("followup %s, mails %v, thanks %v; want completed, one of each", got, mails.calls.list(), thanks.calls.list())
	}
}
