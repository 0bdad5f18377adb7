package cli

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	wf "github.com/effectivelabs/trellis/testdata/acceptance"
)

// The vault workflow marks the card number, the holder and the receipt's
// token sensitive.
const (
	secretCard   = "4111111111111111"
	secretHolder = "Ada Lovelace"
	secretToken  = "tok_" + secretCard
)

// vaultSteps charges a card, and records the card number each step was
// given. For an email starting with bad, charge returns the card number
// as the token, which its pattern refuses.
type vaultSteps struct {
	mu   sync.Mutex
	seen []string
}

func (v *vaultSteps) Charge(_ context.Context, in wf.VaultInput) (wf.VaultChargeOutput, error) {
	v.mu.Lock()
	v.seen = append(v.seen, in.CardNumber)
	v.mu.Unlock()
	token := "tok_" + in.CardNumber
	if strings.HasPrefix(in.Email, "bad") {
		token = in.CardNumber
	}
	return wf.VaultChargeOutput{Receipt: wf.VaultChargeOutputReceipt{ID: "r-1", Token: token}}, nil
}

func (v *vaultSteps) Confirm(_ context.Context, in wf.VaultInput, p wf.VaultConfirmParents) (wf.VaultConfirmOutput, error) {
	last4 := in.CardNumber[len(in.CardNumber)-4:]
	return wf.VaultConfirmOutput{Last4: &last4}, nil
}

func TestSensitiveValuesAreRedacted(t *testing.T) {
	e := newOpsEnv(t)
	steps := &vaultSteps{}
	client, err := wf.RegisterVault(e.h.Engine, steps)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	name := secretHolder
	done, err := client.RunNoWait(ctx, wf.VaultInput{Email: "ada@example.com", CardNumber: secretCard, Holder: &wf.VaultInputHolder{Name: &name}})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := client.RunNoWait(ctx, wf.VaultInput{Email: "bad@example.com", CardNumber: secretCard})
	if err != nil {
		t.Fatal(err)
	}
	e.h.RunUntilIdle()

	if res := e.h.Result(done.ID); res.Status != runtime.RunCompleted {
		t.Fatalf("run %s is %s, want COMPLETED", done.ID, res.Status)
	}
	steps.mu.Lock()
	if len(steps.seen) != 2 || steps.seen[0] != secretCard || steps.seen[1] != secretCard {
		t.Errorf("charge was given card numbers %q, want the real one twice", steps.seen)
	}
	steps.mu.Unlock()

	if _, err := client.CreateSchedule(ctx, "nightly", "0 3 * * *", wf.VaultInput{Email: "ada@example.com", CardNumber: secretCard}); err != nil {
		t.Fatal(err)
	}

	secrets := []string{secretCard, secretHolder, secretToken, "41111111"}
	hidden := func(what, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows the sensitive %q:\n%s", what, s, out)
			}
		}
	}
	for _, args := range [][]string{
		{"runs", "show", done.ID.String()},
		{"runs", "show", done.ID.String(), "-format", "json"},
		{"runs", "show", failed.ID.String()},
		{"runs", "show", failed.ID.String(), "-format", "json"},
		{"runs", "events", failed.ID.String()},
		{"runs", "events", failed.ID.String(), "-format", "json"},
		{"runs", "list", "-workflow", "vault", "-format", "json"},
		{"runs", "list", "-status", "FAILED"},
		{"schedules", "list", "-format", "json"},
		{"schedules", "pause", "-format", "json", "vault", "nightly"},
		{"schedules", "resume", "-format", "json", "vault", "nightly"},
	} {
		out := e.ok(args...)
		hidden(strings.Join(args, " "), out)
		if (args[1] == "show" || args[0] == "schedules") && !strings.Contains(out, runtime.Redacted) {
			t.Errorf("%s shows no %s:\n%s", strings.Join(args, " "), runtime.Redacted, out)
		}
	}
	// What is not marked is shown.
	out := e.ok("runs", "show", done.ID.String(), "-format", "json")
	for _, want := range []string{`"email": "ada@example.com"`, `"id": "r-1"`, `"last4": "1111"`} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show -format json lacks %s:\n%s", want, out)
		}
	}
	// The failed output names the field and the rule, not the value.
	if out := e.ok("runs", "show", failed.ID.String()); !strings.Contains(out, "output.receipt.token: does not match pattern") {
		t.Errorf("runs show of the failed run does not name the offending field:\n%s", out)
	}

	// A filter may not read a sensitive field, not even to guess it.
	code, _, errOut := e.exec("runs", "list", "-workflow", "vault", "-where", `input.cardNumber.startsWith("4")`)
	if code == ExitOK || !strings.Contains(errOut, "marked x-trellis-sensitive") {
		t.Errorf("runs list -where on cardNumber exited %d: %s", code, errOut)
	}
	code, _, errOut = e.exec("runs", "list", "-workflow", "vault", "-where", `input.holder.name == "x"`)
	if code == ExitOK || !strings.Contains(errOut, "marked x-trellis-sensitive") {
		t.Errorf("runs list -where on holder.name exited %d: %s", code, errOut)
	}
	if out := e.ok("runs", "list", "-workflow", "vault", "-where", `input.email == "ada@example.com"`); !strings.Contains(out, done.ID.String()) {
		t.Errorf("runs list -where on email does not list the run:\n%s", out)
	}

	// A trigger whose sensitive fields fail their checks is refused
	// without the values.
	recovery := "ada-at-example.com"
	_, err = client.RunNoWait(ctx, wf.VaultInput{Email: "ada@example.com", CardNumber: "4111-1111-1111-1111", RecoveryEmail: &recovery})
	var ie *runtime.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "input.cardNumber: does not match pattern") ||
		!strings.Contains(err.Error(), `input.recoveryEmail: is not a valid "email"`) ||
		strings.Contains(err.Error(), "4111") || strings.Contains(err.Error(), recovery) {
		t.Errorf("triggering with a malformed card number and recovery email: %v", err)
	}
}
