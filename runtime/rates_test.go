package runtime_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// The rate limits of testdata/acceptance/mailer.yaml on the virtual
// clock: renders ten a second with bursts of five for all runs, sends
// two a second per domain.

func TestRateLimitsMemory(t *testing.T) { testRateLimits(t, trellistest.New(t)) }

func TestRateLimitsPostgres(t *testing.T) {
	testRateLimits(t, trellistest.New(t, trellistest.WithStore(pgstore.New(pgtest.Pool(t)))))
}

type mailerSteps struct{}

func (mailerSteps) Render(context.Context, wf.MailerInput) error { return nil }

func (mailerSteps) Send(context.Context, wf.MailerInput, wf.MailerSendParents) error { return nil }

func testRateLimits(t *testing.T, h *trellistest.Harness) {
	client, err := wf.RegisterMailer(h.Engine, mailerSteps{})
	if err != nil {
		t.Fatal(err)
	}
	var inputs []wf.MailerInput
	for _, domain := range []string{"a.com", "a.com", "a.com", "b.com", "a.com", "a.com", "b.com", "a.com"} {
		inputs = append(inputs, wf.MailerInput{To: "x@" + domain, Domain: domain})
	}
	refs, err := client.RunManyNoWait(t.Context(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	h.Settle()

	var renders []time.Duration
	sends := map[string][]time.Duration{}
	for i, ref := range refs {
		if res := h.Result(ref.ID); res.Status != runtime.RunCompleted {
			t.Fatalf("run %d ended %s", i, res.Status)
		}
		renders = append(renders, h.Times(ref.ID, "render", runtime.EventStarted)...)
		sends[inputs[i].Domain] = append(sends[inputs[i].Domain], h.Times(ref.ID, "send", runtime.EventStarted)...)
	}
	slices.Sort(renders)
	// Five renders at once, then one every 100ms.
	want := []time.Duration{0, 0, 0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	if !slices.Equal(renders, want) {
		t.Errorf("renders started at %v, want %v (a burst of five, then ten a second)", renders, want)
	}
	for domain, times := range sends {
		slices.Sort(times)
		for i := 1; i < len(times); i++ {
			if gap := times[i] - times[i-1]; gap < 500*time.Millisecond {
				t.Errorf("%s: sends started at %v: %s apart, want at least 500ms (two a second)", domain, times, gap)
				break
			}
		}
	}
	// b.com's sends do not wait behind a.com's: its first goes as soon as
	// its render is done.
	if first := slices.Min(sends["b.com"]); first > 100*time.Millisecond {
		t.Errorf("b.com's first send started at %s, behind a.com's line", first)
	}
	if got := len(sends["a.com"]); got != 6 {
		t.Errorf("a.com had %d sends, want 6", got)
	}
	t.Logf("a.com sends at %v; b.com at %v", sends["a.com"], sends["b.com"])
}
