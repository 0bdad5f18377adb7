package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/effectivelabs/trellis/examples/fulfilment/workflow"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
)

// warehouse is the code of both workflows: it implements
// workflow.FulfilmentSteps and workflow.ShipmentSteps. A real one would
// call a payment provider and a courier; this one prints what it does.
type warehouse struct {
	out   io.Writer
	clock clock.Clock
	start time.Time
	mu    sync.Mutex // out is written from steps running at once
}

var (
	_ workflow.FulfilmentSteps = (*warehouse)(nil)
	_ workflow.ShipmentSteps   = (*warehouse)(nil)
)

// say prints a line stamped with the time since the demo started, and
// the run it is about.
func (w *warehouse) say(ctx context.Context, format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	info, _ := runtime.InfoFromContext(ctx)
	at := w.clock.Now().Sub(w.start)
	fmt.Fprintf(w.out, "  [+%-5s %-22s %-16s] %s\n", duration(at), info.Workflow, info.Step, fmt.Sprintf(format, args...))
}

func duration(d time.Duration) string {
	d = d.Round(time.Second)
	if d >= 24*time.Hour {
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	}
	return d.String()
}

// ChargeLine charges one line item; it runs once per item, up to four at
// once per order.
func (w *warehouse) ChargeLine(ctx context.Context, line workflow.FulfilmentChargeLineItem) (workflow.FulfilmentChargeLineOutput, error) {
	cents := line.Quantity * line.UnitCents
	w.say(ctx, "charged %d x %s: %s", line.Quantity, line.SKU, money(cents))
	return workflow.FulfilmentChargeLineOutput{SKU: line.SKU, ChargeID: "ch_" + strings.ToLower(line.SKU), Cents: cents}, nil
}

// BookCourier books a courier for an order's parcels (the shipment
// workflow's first step).
func (w *warehouse) BookCourier(ctx context.Context, in workflow.ShipmentInput) (workflow.ShipmentBookCourierOutput, error) {
	tracking := fmt.Sprintf("TRK-%s-%d", in.OrderID, in.Parcels)
	w.say(ctx, "booked a courier for %d parcel(s) to %s, %s: %s", in.Parcels, in.Street, in.City, tracking)
	return workflow.ShipmentBookCourierOutput{Courier: "Speedy", Tracking: tracking}, nil
}

// OutForDelivery runs when the parcels have been in transit for two days.
func (w *warehouse) OutForDelivery(ctx context.Context, in workflow.ShipmentInput, p workflow.ShipmentOutForDeliveryParents) (workflow.ShipmentOutForDeliveryOutput, error) {
	eta := w.clock.Now().Add(4 * time.Hour).UTC()
	w.say(ctx, "%s is out for delivery", p.BookCourier.Tracking)
	return workflow.ShipmentOutForDeliveryOutput{Eta: eta}, nil
}

// Close closes the order: with the customer's confirmation, or, after
// three days without one, by opening a support ticket.
func (w *warehouse) Close(ctx context.Context, in workflow.FulfilmentInput, p workflow.FulfilmentCloseParents) (workflow.FulfilmentCloseOutput, error) {
	var charged int64
	for _, c := range p.ChargeLine {
		charged += c.Cents
	}
	summary := fmt.Sprintf("order %s: %s charged, shipped with %s (%s)", in.OrderID, money(charged), p.Ship.BookCourier.Courier, p.Ship.BookCourier.Tracking)
	if p.ConfirmDelivery != nil {
		summary += ", delivery confirmed by " + p.ConfirmDelivery.SignedBy
	} else {
		summary += ", no confirmation in 3 days: support ticket opened"
	}
	w.say(ctx, "%s", summary)
	return workflow.FulfilmentCloseOutput{Summary: summary}, nil
}

func money(cents int64) string { return fmt.Sprintf("€%d.%02d", cents/100, cents%100) }
