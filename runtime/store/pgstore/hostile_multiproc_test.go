package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/testdata/multiproc"
)

// The hostile-input suite (SPEC §8, Trust): values from users and steps
// that are huge, malformed or hostile, sent to two worker processes on
// Postgres together with ordinary runs. Each hostile value gets a clear
// error or its documented outcome (docs/concepts/security.md lists them), every
// ordinary run completes, no worker stalls, and nothing is left behind.

// hostileSteps is the hostile workflow's code: charge returns what the
// run's mode asks for.
type hostileSteps struct{}

// hostileError holds what a terminal acts on (an OSC 52 clipboard write,
// a colour, a bidi override), a NUL and bytes that are not UTF-8, and is
// far longer than an error is kept.
var hostileError = strings.Repeat("\x1b]52;c;cGF5bG9hZA==\x07\x1b[31m\u202e\x00\xff\xfe", 5000)

func (hostileSteps) Charge(_ context.Context, in multiproc.HostileInput) (multiproc.HostileChargeOutput, error) {
	switch in.Mode {
	case multiproc.HostileInputModeHugeOutput:
		return multiproc.HostileChargeOutput{Note: strings.Repeat("x", 2<<20)}, nil
	case multiproc.HostileInputModeHostileError:
		return multiproc.HostileChargeOutput{}, runtime.NonRetryable(errors.New(hostileError))
	}
	return multiproc.HostileChargeOutput{Note: "charged"}, nil
}

func (hostileSteps) Each(_ context.Context, item multiproc.HostileEachItem) (multiproc.HostileEachOutput, error) {
	return multiproc.HostileEachOutput{Size: int64(len(item))}, nil
}

func (hostileSteps) Finish(context.Context, multiproc.HostileInput, multiproc.HostileFinishParents) error {
	return nil
}

// hostileRun is a run the suite triggers, and how it must end.
type hostileRun struct {
	name     string
	in       multiproc.HostileInput
	approve  bool   // send its approval, keyed by its customer
	poisoned bool   // its task row is made unclaimable, as a row written before keys were digested can be
	failWith string // "" to complete; else a text its failure must hold
}

func TestHostileInputs(t *testing.T) {
	c := newCluster(t)
	ctx := t.Context()
	ordinary := func(customer string) multiproc.HostileInput {
		return multiproc.HostileInput{Customer: customer, Items: []string{"a", "bb"}, Mode: multiproc.HostileInputModeOrdinary}
	}

	// Refused at the door, with an error naming the limit; nothing is
	// written.
	refused := map[string]error{}
	_, refused["input over 1 MiB"] = c.hostile.RunNoWait(ctx, multiproc.HostileInput{
		Customer: "huge", Items: []string{strings.Repeat("x", 2<<20)}, Mode: multiproc.HostileInputModeOrdinary})
	deep := `{"customer":"deep","items":[],"mode":"ordinary","extra":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`
	_, refused["input nested 100 deep"] = c.hostile.Workflow().Trigger(ctx, json.RawMessage(deep))
	_, refused["tenant of 10,000 bytes"] = c.hostile.RunNoWait(ctx, ordinary("t"), runtime.WithTenant(strings.Repeat("t", 10_000)))
	_, refused["tenant with a NUL"] = c.hostile.RunNoWait(ctx, ordinary("t"), runtime.WithTenant("a\x00b"))
	_, refused["idempotency key of 10,000 bytes"] = c.hostile.RunNoWait(ctx, ordinary("k"), runtime.WithIdempotencyKey(strings.Repeat("k", 10_000)))
	note := strings.Repeat("n", 2<<20)
	_, refused["event payload over 1 MiB"] = c.hostile.SendApproved(ctx, "c-0", multiproc.HostileApprovedEvent{Note: &note})
	// Each error names what it refused.
	names := map[string]string{"input over 1 MiB": "input", "input nested 100 deep": "input", "tenant of 10,000 bytes": "tenant",
		"tenant with a NUL": "tenant", "idempotency key of 10,000 bytes": "idempotency key", "event payload over 1 MiB": "payload"}
	for what, err := range refused {
		switch {
		case err == nil:
			t.Errorf("%s: accepted", what)
		case !strings.Contains(err.Error(), names[what]):
			t.Errorf("%s: %v, want an error that names the %s", what, err, names[what])
		case len(err.Error()) > 1000:
			t.Errorf("%s: the error is %d bytes long; it must not quote the value", what, len(err.Error()))
		case what != "tenant with a NUL" && !errors.Is(err, runtime.ErrOverLimit):
			t.Errorf("%s: %v, want an error over a size limit", what, err)
		}
	}

	// Accepted: hostile values and ordinary runs, all at once.
	manyItems := make([]string, 10_001)
	for i := range manyItems {
		manyItems[i] = "i"
	}
	runs := []hostileRun{
		{name: "a customer longer than an index entry", in: ordinary(longCustomer()), approve: true},
		{name: "a customer a terminal would act on", in: ordinary("\x1b[31mred\u202eevil\r"), approve: true},
		{name: "a map of 10,001 items", in: multiproc.HostileInput{Customer: "many", Items: manyItems, Mode: multiproc.HostileInputModeOrdinary},
			failWith: "items"},
		{name: "an output over 1 MiB", in: multiproc.HostileInput{Customer: "big", Items: []string{}, Mode: multiproc.HostileInputModeHugeOutput},
			failWith: "output"},
		{name: "an error hostile to terminals, 165 kB long", in: multiproc.HostileInput{Customer: "err", Items: []string{}, Mode: multiproc.HostileInputModeHostileError},
			failWith: "cGF5bG9hZA=="},
		{name: "a task the database cannot claim", in: ordinary("poisoned"), approve: true, poisoned: true,
			failWith: "could not claim the task"},
	}
	for i := range 20 {
		runs = append(runs, hostileRun{name: fmt.Sprintf("ordinary %d", i), in: ordinary(fmt.Sprintf("c-%d", i)), approve: true})
	}
	ids := make([]runtime.RunID, len(runs))
	for i, r := range runs {
		ref, err := c.hostile.RunNoWait(ctx, r.in)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		ids[i] = ref.ID
		if r.poisoned {
			// A random key, which Postgres cannot compress under its limit.
			if _, err := c.pool.Exec(ctx, `UPDATE trellis_tasks SET rate_key = $2 WHERE run_id = $1 AND step = 0`,
				ref.ID, "hostile:"+longCustomer()); err != nil {
				t.Fatal(err)
			}
		}
		if r.approve {
			if _, err := c.hostile.SendApproved(ctx, r.in.Customer, multiproc.HostileApprovedEvent{}); err != nil {
				t.Fatalf("%s: sending its approval: %v", r.name, err)
			}
		}
	}
	c.start("w0")
	c.start("w1")

	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	results, err := c.engine.WaitMany(wctx, ids)
	if err != nil {
		t.Fatalf("the runs did not all end within 60s: %v", err)
	}
	for i, r := range runs {
		res := results[i]
		switch {
		case r.failWith == "" && res.Status != runtime.RunCompleted:
			t.Errorf("%s: %s (%+v), want COMPLETED", r.name, res.Status, res.Failure)
		case r.failWith == "":
		case res.Status != runtime.RunFailed || res.Failure == nil:
			t.Errorf("%s: %s, want FAILED", r.name, res.Status)
		case !strings.Contains(res.Failure.Error, r.failWith):
			t.Errorf("%s: failed with %.300q, want it to say %q", r.name, res.Failure.Error, r.failWith)
		}
		if res.Failure != nil {
			if msg := res.Failure.Error; len(msg) > 10_000 || !utf8.ValidString(msg) || strings.ContainsRune(msg, 0) {
				t.Errorf("%s: the recorded error is %d bytes, valid UTF-8 %v, NUL %v: want it short, valid and without NUL",
					r.name, len(msg), utf8.ValidString(msg), strings.ContainsRune(msg, 0))
			}
		}
	}

	// Nothing was written for the refused triggers; nothing is left held
	// or queued.
	var runsStored, leases, ready, live int
	if err := c.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM trellis_runs WHERE workflow = 'hostile' AND parent_run_id IS NULL),
		(SELECT count(*) FROM trellis_leases), (SELECT count(*) FROM trellis_ready),
		(SELECT count(*) FROM trellis_tasks t JOIN trellis_runs r ON r.id = t.run_id
		 WHERE r.workflow = 'hostile' AND t.status NOT IN ('COMPLETED', 'SKIPPED', 'FAILED', 'CANCELLED', 'PENDING'))`,
	).Scan(&runsStored, &leases, &ready, &live); err != nil {
		t.Fatal(err)
	}
	if runsStored != len(runs) || leases+ready+live != 0 {
		t.Errorf("%d hostile runs stored (want %d), %d leases, %d queued, %d tasks live", runsStored, len(runs), leases, ready, live)
	}
	for _, path := range c.logs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"panic", "DATA RACE", "fatal error"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("worker log %s has %q", path, bad)
			}
		}
	}
}
