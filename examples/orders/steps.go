package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/effectivelabs/trellis/examples/orders/workflow"
	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
)

// limitCents is the largest order the shop accepts.
const limitCents = 100_000

// shop implements the steps of the order-processing workflow. Each step
// prints a line when it runs; in a real service they would call a payment
// provider, a warehouse and so on.
type shop struct {
	mu    sync.Mutex
	out   io.Writer
	clock clock.Clock
	start time.Time
	// gatewayDown fails every charge at once, as a payment gateway that
	// is down would (-gateway-down): runs fail at charge, to be retried.
	gatewayDown bool
}

var _ workflow.OrderProcessingSteps = (*shop)(nil)

func (s *shop) say(ctx context.Context, format string, args ...any) {
	info, _ := runtime.InfoFromContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	elapsed := s.clock.Now().Sub(s.start).Truncate(time.Second)
	fmt.Fprintf(s.out, "  [+%-8s] %-16s %s\n", elapsed, info.Step, fmt.Sprintf(format, args...))
}

func (s *shop) Validate(ctx context.Context, in workflow.OrderProcessingInput) (workflow.OrderProcessingValidateOutput, error) {
	if in.AmountCents > limitCents {
		reason := fmt.Sprintf("%s: %s is over the %s limit", in.OrderID, money(in.AmountCents), money(limitCents))
		s.say(ctx, "invalid: %s", reason)
		return workflow.OrderProcessingValidateOutput{IsValid: false, Reason: &reason}, nil
	}
	s.say(ctx, "%s for %s is valid", in.OrderID, money(in.AmountCents))
	return workflow.OrderProcessingValidateOutput{IsValid: true}, nil
}

func (s *shop) Charge(ctx context.Context, in workflow.OrderProcessingInput, _ workflow.OrderProcessingChargeParents) (workflow.OrderProcessingChargeOutput, error) {
	if s.gatewayDown {
		s.say(ctx, "could not charge %s: the payment gateway is down", in.OrderID)
		return workflow.OrderProcessingChargeOutput{}, runtime.NonRetryable(errors.New("payment gateway unavailable: 503 Service Unavailable"))
	}
	id := "ch_" + in.OrderID
	s.say(ctx, "charged %s (%s)", money(in.AmountCents), id)
	return workflow.OrderProcessingChargeOutput{ChargeID: &id}, nil
}

func (s *shop) Reject(ctx context.Context, in workflow.OrderProcessingInput, p workflow.OrderProcessingRejectParents) error {
	reason := "no reason given"
	if p.Validate.Reason != nil {
		reason = *p.Validate.Reason
	}
	s.say(ctx, "told the customer: %s", reason)
	return nil
}

func (s *shop) PrepareShipment(ctx context.Context, in workflow.OrderProcessingInput, p workflow.OrderProcessingPrepareShipmentParents) error {
	s.say(ctx, "packed %s", in.OrderID)
	return nil
}

func (s *shop) Ship(ctx context.Context, in workflow.OrderProcessingInput, _ workflow.OrderProcessingShipParents) error {
	s.say(ctx, "shipped %s after the fraud window", in.OrderID)
	return nil
}

func (s *shop) Finalize(ctx context.Context, in workflow.OrderProcessingInput, p workflow.OrderProcessingFinalizeParents) error {
	switch {
	case p.Ship:
		s.say(ctx, "closed %s: shipped", in.OrderID)
	case p.Reject:
		s.say(ctx, "closed %s: rejected", in.OrderID)
	}
	return nil
}

func (s *shop) NotifyAdmin(ctx context.Context, in workflow.OrderProcessingInput, f runtime.Failure) error {
	s.say(ctx, "paged the admin: %s failed at %s: %s", in.OrderID, f.Step, f.Error)
	return nil
}

func money(cents int64) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }
