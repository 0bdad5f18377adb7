package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

type shipper struct{}

func (shipper) Book(context.Context, wf.ShipmentInput) (wf.ShipmentBookOutput, error) {
	return wf.ShipmentBookOutput{Carrier: "c", Tracking: "t"}, nil
}

func (shipper) Label(context.Context, wf.ShipmentInput, wf.ShipmentLabelParents) (wf.ShipmentLabelOutput, error) {
	return wf.ShipmentLabelOutput{URL: "u"}, nil
}

type deliverer struct{}

func (deliverer) Pack(context.Context, wf.DeliveryInput) (wf.DeliveryPackOutput, error) {
	return wf.DeliveryPackOutput{Parcels: 1}, nil
}

func (deliverer) Reship(context.Context, wf.DeliveryInput, wf.DeliveryReshipParents) (wf.DeliveryReshipInput, error) {
	return wf.DeliveryReshipInput{}, nil
}

func (deliverer) Close(context.Context, wf.DeliveryInput, wf.DeliveryCloseParents) (wf.DeliveryCloseOutput, error) {
	return wf.DeliveryCloseOutput{Summary: "ok"}, nil
}

// TestEventsSend unblocks a run's waits from the command line: by key,
// then to the run, with the payload checked against the stored schema.
func TestEventsSend(t *testing.T) {
	e := newOpsEnv(t)
	ctx := t.Context()
	if _, err := wf.RegisterShipment(e.h.Engine, shipper{}); err != nil {
		t.Fatal(err)
	}
	client, err := wf.RegisterDelivery(e.h.Engine, deliverer{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(ctx, wf.DeliveryInput{OrderID: "o-1", Address: wf.DeliveryInputAddress{City: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	e.h.RunUntilIdle()

	if out := e.ok("events", "send", "-key", "o-1", "delivery", "delivered", `{"signedBy": "ada"}`); out != "sent delivered of delivery to key o-1: woke 1 waiting step\n" {
		t.Errorf("events send -key = %q", out)
	}
	e.h.RunUntilIdle()
	id := ref.ID.String()
	if out := e.ok("events", "send", "delivery", "review", `{"stars": 5}`, "-run", id); out != "sent review of delivery to run "+id+": woke 1 waiting step\n" {
		t.Errorf("events send -run = %q", out)
	}
	e.h.RunUntilIdle()
	res, err := client.Result(ctx, ref.ID)
	if err != nil || res.Status != runtime.RunCompleted || res.Confirm.SignedBy != "ada" || res.Feedback.Stars != 5 {
		t.Fatalf("after the events: %+v, %v", res, err)
	}

	for _, tt := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"-key", "o-1", "delivery", "delivered", `{}`}, ExitProblems, "payload.signedBy: is required but missing"},
		{[]string{"-key", "o-1", "delivery", "shipped", `{}`}, ExitProblems, `declares no event "shipped"; it declares [delivered review]`},
		{[]string{"-key", "o-1", "nope", "delivered", `{}`}, ExitProblems, `no version of workflow "nope" is stored`},
		{[]string{"-run", "01a20fb0-c631-7cab-8d88-4c254071471e", "delivery", "review", `{"stars": 1}`}, ExitProblems, "run not found"},
		{[]string{"delivery", "review", `{"stars": 1}`}, ExitUsage, "give -run RUN to send the event to a run, or -key KEY"},
		{[]string{"-key", "k", "-run", id, "delivery", "review", `{}`}, ExitUsage, "give -run or -key, not both"},
		{[]string{"-key", "k", "delivery", "review", `{stars`}, ExitUsage, "is not JSON"},
		{[]string{"-key", "k", "delivery"}, ExitUsage, "give an event and its payload to publish it"},
	} {
		code, _, stderr := e.exec(append([]string{"events", "send"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("events send %s = %d, %s; want %d with %q", strings.Join(tt.args, " "), code, stderr, tt.code, tt.stderr)
		}
	}
}

type reviewer struct{}

func (reviewer) Review(_ context.Context, in wf.BigOrdersInput) (wf.BigOrdersReviewOutput, error) {
	return wf.BigOrdersReviewOutput{Note: "ok"}, nil
}

type mailer struct{}

func (mailer) Mail(context.Context, wf.ReceiptsInput) error { return nil }

// TestEventsPublish publishes order-placed from the command line: it
// starts the workflows that start on it whose filters match, once per
// event id, and says which refused it.
func TestEventsPublish(t *testing.T) {
	e := newOpsEnv(t)
	if _, err := wf.RegisterBigOrders(e.h.Engine, reviewer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := wf.RegisterReceipts(e.h.Engine, mailer{}); err != nil {
		t.Fatal(err)
	}
	// The workflows are stored when a worker starts them, or their first
	// run is triggered: publish once through the engine.
	if _, err := e.h.Engine.PublishEvent(t.Context(), "order-placed", "", []byte(`{"id": "o-0", "total": 1}`)); err != nil {
		t.Fatal(err)
	}
	uuids := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	versions := regexp.MustCompile(`@[0-9a-f]{16}`)
	transcriptOf(t, "events-publish.txt", func(args ...string) (int, string, string) {
		code, out, errOut := e.exec(args...)
		n := 0
		out = uuids.ReplaceAllStringFunc(out, func(string) string { n++; return fmt.Sprintf("<run %d>", n) })
		return code, versions.ReplaceAllString(out, "@<version>"), errOut
	},
		[]string{"events", "send", "-id", "evt-1", "order-placed", `{"id": "o-1", "total": 250}`},
		[]string{"events", "send", "order-placed", "-payload", `{"id": "o-1", "total": 250}`, "-id", "evt-1"},
		[]string{"events", "send", "-id", "evt-2", "-tenant", "acme", "order-placed", `{"id": "o-2", "total": 20}`},
		[]string{"events", "send", "order-placed", `{"id": "", "total": 900}`},
		[]string{"events", "send", "order-placed", `{"id": 7}`},
		[]string{"events", "send", "order-shipped", `{}`},
		[]string{"events", "send", "-format", "json", "-id", "evt-2", "-tenant", "acme", "order-placed", `{"id": "o-2", "total": 20}`},
		[]string{"events", "send", "-id", "x", "-key", "k", "receipts", "order-placed", `{}`},
		[]string{"workflows"},
	)
	e.h.RunUntilIdle()
}

// TestEventsPublishTags: a published event's -tag flags tag the runs it
// starts, which runs list -tag then finds; -tag goes with publishing only.
func TestEventsPublishTags(t *testing.T) {
	e := newOpsEnv(t)
	if _, err := wf.RegisterBigOrders(e.h.Engine, reviewer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := wf.RegisterReceipts(e.h.Engine, mailer{}); err != nil {
		t.Fatal(err)
	}
	// Stored by a first publish through the engine, untagged.
	if _, err := e.h.Engine.PublishEvent(t.Context(), "order-placed", "", []byte(`{"id": "o-0", "total": 1}`)); err != nil {
		t.Fatal(err)
	}
	e.ok("events", "send", "-tag", "channel=shop", "-tag", "region=eu", "order-placed", `{"id": "o-1", "total": 250}`)
	var page ops.RunPage
	e.json(&page, "runs", "list", "-tag", "channel=shop")
	if len(page.Runs) != 2 {
		t.Fatalf("runs tagged channel=shop: %d, want the 2 the event started", len(page.Runs))
	}
	for _, r := range page.Runs {
		if r.Tags["channel"] != "shop" || r.Tags["region"] != "eu" || len(r.Tags) != 2 {
			t.Errorf("run %s of %s has tags %v", r.ID, r.Workflow, r.Tags)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-tag", "channel", "order-placed", `{}`}, `-tag "channel": give key=value`},
		{[]string{"-tag", "a=b", "-key", "k", "receipts", "order-placed", `{}`}, "-tag goes with a published event"},
		{[]string{"-tag", "Channel=x", "order-placed", `{"id": "o-2", "total": 250}`}, `tag key "Channel" has "C" at byte 0`},
	} {
		code, _, stderr := e.exec(append([]string{"events", "send"}, tt.args...)...)
		if code == ExitOK || !strings.Contains(stderr, tt.want) {
			t.Errorf("events send %s = %d %q, want %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
}

type thanker struct{}

func (thanker) Thank(context.Context, wf.OrderFollowupInput, wf.OrderFollowupThankParents) (wf.OrderFollowupThankOutput, error) {
	return wf.OrderFollowupThankOutput{Note: "ok"}, nil
}

// TestEventsPublishWithKey publishes order-placed with a key from the
// command line: it starts receipts and wakes order-followup's wait for
// the order, once per event id, and says what it did to each.
func TestEventsPublishWithKey(t *testing.T) {
	e := newOpsEnv(t)
	if _, err := wf.RegisterReceipts(e.h.Engine, mailer{}); err != nil {
		t.Fatal(err)
	}
	followups, err := wf.RegisterOrderFollowup(e.h.Engine, thanker{})
	if err != nil {
		t.Fatal(err)
	}
	// receipts is stored by a run of its own; order-followup's runs wait
	// for o-1 and o-2.
	if _, err := e.h.Engine.PublishEvent(t.Context(), "order-placed", "", []byte(`{"id": "o-0", "total": 1}`)); err != nil {
		t.Fatal(err)
	}
	var waiting []runtime.RunID
	for _, order := range []string{"o-1", "o-2"} {
		ref, err := followups.RunNoWait(t.Context(), wf.OrderFollowupInput{OrderID: order})
		if err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, ref.ID)
	}
	e.h.RunUntilIdle()
	e.h.Advance(time.Second)
	uuids := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	versions := regexp.MustCompile(`@[0-9a-f]{16}`)
	transcriptOf(t, "events-publish-key.txt", func(args ...string) (int, string, string) {
		code, out, errOut := e.exec(args...)
		n := 0
		out = uuids.ReplaceAllStringFunc(out, func(string) string { n++; return fmt.Sprintf("<run %d>", n) })
		return code, versions.ReplaceAllString(out, "@<version>"), errOut
	},
		[]string{"events", "send", "-id", "evt-1", "-key", "o-1", "order-placed", `{"id": "o-1", "total": 250, "customer": "ada"}`},
		[]string{"events", "send", "-id", "evt-1", "-key", "o-1", "order-placed", `{"id": "o-1", "total": 250, "customer": "ada"}`},
		[]string{"events", "send", "-id", "evt-2", "-key", "o-9", "order-placed", `{"id": "o-9", "total": 5, "customer": "bob"}`},
		[]string{"events", "send", "-id", "evt-3", "-key", "o-2", "order-placed", `{"id": "o-2", "total": 5}`},
		[]string{"events", "send", "-format", "json", "-id", "evt-4", "-key", "o-2", "order-placed", `{"id": "o-2", "total": 5, "customer": "cy"}`},
		[]string{"events", "send", "-key", "o-2", "order-shipped", `{}`},
		[]string{"events", "send", "-run", "0190", "order-placed", `{}`},
	)
	e.h.RunUntilIdle()
	for _, id := range waiting {
		if res := e.h.Result(id); res.Status != runtime.RunCompleted {
			t.Errorf("order-followup run %s is %s; want completed by its event", id, res.Status)
		}
	}
}
