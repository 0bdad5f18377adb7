package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
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
		{[]string{"-key", "k", "delivery", "review"}, ExitUsage, "give a workflow, an event and its payload"},
	} {
		code, _, stderr := e.exec(append([]string{"events", "send"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("events send %s = %d, %s; want %d with %q", strings.Join(tt.args, " "), code, stderr, tt.code, tt.stderr)
		}
	}
}
