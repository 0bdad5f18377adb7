package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// The engine's SizeLimits, at their defaults but for MaxMapItems, on both
// stores: what is over a limit is refused where it enters, with an error
// naming what and which limit, without quoting the value.

func TestSizeLimitsMemory(t *testing.T) { testSizeLimits(t, trellistest.New(t, mapItems(5))) }

func TestSizeLimitsPostgres(t *testing.T) {
	testSizeLimits(t, trellistest.New(t, mapItems(5), trellistest.WithStore(pgstore.New(pgtest.Pool(t)))))
}

func mapItems(n int) trellistest.Option {
	return trellistest.WithConfig(func(c *runtime.Config) { c.SizeLimits.MaxMapItems = n })
}

// boundedSpec echoes its input's blob as its first step's output
// (doubled, or wrapped in arrays, as the input says), and maps over its
// input's items.
func boundedSpec() *runtime.WorkflowSpec {
	retry := runtime.DefaultRetryPolicy()
	retry.MaxRetries = 3
	return &runtime.WorkflowSpec{
		Name:        "bounded",
		InputSchema: `{"type":"object","properties":{"blob":{},"double":{"type":"boolean"},"wrap":{"type":"integer"},"items":{"type":"array","items":{"type":"integer"}}}}`,
		Events:      []runtime.EventSpec{{Name: "poked", Schema: `{"type":"object"}`}},
		Steps: []runtime.StepSpec{
			{Name: "echo", Retry: retry},
			{Name: "after", Parents: []string{"echo"}},
			{Name: "each", ForEach: &runtime.ForEachSpec{Items: "has(input.items) ? input.items : []", ItemSchema: `{"type":"integer"}`}},
			{Name: "poke", WaitFor: &runtime.WaitForSpec{Event: "poked", Key: "'k'"}},
		},
	}
}

// tally counts the runs of each step; steps run concurrently.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *tally) add(step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[step]++
}

func (c *tally) of(step string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[step]
}

func boundedHandlers(ran *tally) runtime.Handlers {
	return runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"echo": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
			ran.add("echo")
			var in struct {
				Blob   json.RawMessage
				Double bool
				Wrap   int
			}
			if err := json.Unmarshal(req.Input, &in); err != nil {
				return nil, err
			}
			out := in.Blob
			if in.Double {
				out = json.RawMessage("[" + string(out) + "," + string(out) + "]")
			}
			for range in.Wrap {
				out = json.RawMessage("[" + string(out) + "]")
			}
			return out, nil
		},
		"after": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			ran.add("after")
			return nil, nil
		},
		"each": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { ran.add("each"); return nil, nil },
	}}
}

// blob is a JSON string of n bytes in all, quotes included.
func blob(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) }

// nested is a JSON value nested depth arrays deep.
func nested(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

func inputWith(b json.RawMessage) json.RawMessage {
	return json.RawMessage(`{"blob":` + string(b) + `}`)
}

// overLimit checks that err is a refusal naming field and limit, matching
// the sentinels given, and not quoting a long value.
func overLimit(t *testing.T, what string, err error, field, limit string, is ...error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted, want refused", what)
		return
	}
	for _, target := range append(is, runtime.ErrOverLimit) {
		if !errors.Is(err, target) {
			t.Errorf("%s: %v does not match %v", what, err, target)
		}
	}
	var le *runtime.LimitError
	if !errors.As(err, &le) || le.Field != field || le.Limit != limit {
		t.Errorf("%s: %v, want a *LimitError for %s over %s", what, err, field, limit)
	}
	msg := err.Error()
	if !strings.Contains(msg, "Config.SizeLimits."+limit) || !strings.Contains(msg, field) || len(msg) > 300 || strings.Contains(msg, "xxxxxxxx") {
		t.Errorf("%s: message %q should name %s and Config.SizeLimits.%s, briefly", what, msg, field, limit)
	}
}

func testSizeLimits(t *testing.T, h *trellistest.Harness) {
	ctx := t.Context()
	ran := &tally{}
	wf, err := h.Engine.Register(boundedSpec(), boundedHandlers(ran))
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20

	t.Run("refused at trigger, nothing written", func(t *testing.T) {
		_, err := wf.Trigger(ctx, inputWith(blob(mib)))
		overLimit(t, "input of 1 MiB and a bit", err, "input", "MaxInputBytes", runtime.ErrInvalidInput)
		_, err = wf.Trigger(ctx, inputWith(nested(64)))
		overLimit(t, "input nested 65 deep", err, "input", "MaxDepth", runtime.ErrInvalidInput)
		// Not even JSON, a million brackets deep: refused at level 65.
		_, err = wf.Trigger(ctx, json.RawMessage(strings.Repeat("[", 1_000_000)))
		overLimit(t, "a million open brackets", err, "input", "MaxDepth", runtime.ErrInvalidInput)
		_, err = wf.TriggerMany(ctx, []json.RawMessage{inputWith(blob(10)), inputWith(blob(mib))})
		overLimit(t, "the second input of a batch", err, "input", "MaxInputBytes", runtime.ErrInvalidInput)

		_, err = wf.Trigger(ctx, nil, runtime.WithTenant(strings.Repeat("t", 256)))
		overLimit(t, "tenant of 256 bytes", err, "tenant", "MaxTenantBytes")
		_, err = wf.Trigger(ctx, nil, runtime.WithIdempotencyKey(strings.Repeat("k", 513)))
		overLimit(t, "idempotency key of 513 bytes", err, "idempotency key", "MaxIdempotencyKeyBytes")
		_, err = wf.TriggerMany(ctx, []json.RawMessage{nil, nil}, runtime.WithIdempotencyKeys("a", strings.Repeat("k", 513)))
		overLimit(t, "idempotency key of 513 bytes in a batch", err, "idempotency key of input 1", "MaxIdempotencyKeyBytes")
		for _, bad := range []struct{ what, tenant, key, want string }{
			{"tenant with NUL", "ac\x00me", "", "tenant contains a NUL byte"},
			{"tenant not UTF-8", "ac\xffme", "", "tenant is not valid UTF-8"},
			{"key with NUL", "acme", "k\x00", "idempotency key contains a NUL byte"},
			{"key not UTF-8", "acme", "k\xff", "idempotency key is not valid UTF-8"},
		} {
			_, err := wf.Trigger(ctx, nil, runtime.WithTenant(bad.tenant), runtime.WithIdempotencyKey(bad.key))
			if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "triggering bounded") || !errors.Is(err, runtime.ErrInvalidIdentifier) {
				t.Errorf("%s: %v, want %q", bad.what, err, bad.want)
			}
		}
		if n := h.RunUntilIdle(); n != 0 {
			t.Errorf("refused triggers left %d tasks to run", n)
		}
	})

	t.Run("at the limits, accepted", func(t *testing.T) {
		// The input is the blob and the 9 bytes of {"blob":} around it.
		ref, err := wf.Trigger(ctx, inputWith(nested(63)), runtime.WithTenant(strings.Repeat("t", 255)),
			runtime.WithIdempotencyKey(strings.Repeat("k", 512)))
		if err != nil {
			t.Fatal(err)
		}
		big, err := wf.Trigger(ctx, inputWith(blob(mib-9)))
		if err != nil {
			t.Fatal(err)
		}
		h.RunUntilIdle()
		for _, id := range []runtime.RunID{ref.ID, big.ID} {
			if got := h.Steps(id)["after"]; got != runtime.TaskCompleted {
				t.Errorf("run %s: after is %s, want COMPLETED", id, got)
			}
		}
	})

	t.Run("a step output over the limit fails the step at once", func(t *testing.T) {
		for _, c := range []struct {
			what  string
			input string
			limit string
		}{
			{"1 MiB and a bit", `{"double":true,"blob":` + string(blob(mib/2)) + `}`, "MaxOutputBytes"},
			{"65 deep", `{"wrap":2,"blob":` + string(nested(63)) + `}`, "MaxDepth"},
		} {
			before := ran.of("echo")
			ref, err := wf.Trigger(ctx, json.RawMessage(c.input))
			if err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			h.RunUntilIdle()
			res := h.Result(ref.ID)
			if res.Status != runtime.RunFailed || res.Failure == nil || res.Failure.Step != "echo" {
				t.Fatalf("%s: run %s, failure %+v; want FAILED at echo", c.what, res.Status, res.Failure)
			}
			msg := res.Failure.Error
			if !strings.Contains(msg, "output of step echo") || !strings.Contains(msg, "Config.SizeLimits."+c.limit) || len(msg) > 300 {
				t.Errorf("%s: failure %q should name the step and the limit, briefly", c.what, msg)
			}
			if got := ran.of("echo") - before; got != 1 {
				t.Errorf("%s: echo ran %d times, want once (no retries)", c.what, got)
			}
			if got := res.Steps["after"]; got == runtime.TaskCompleted {
				t.Errorf("%s: after is %s; children never see an output over the limit", c.what, got)
			}
		}
		if ran.of("after") != 2 {
			t.Errorf("after ran %d times, want 2 (for the runs at the limits only)", ran.of("after"))
		}
	})

	t.Run("a map over MaxMapItems fails, starting no item", func(t *testing.T) {
		before := ran.of("each")
		ok, err := wf.Trigger(ctx, json.RawMessage(`{"items":[1,2,3,4,5]}`))
		if err != nil {
			t.Fatal(err)
		}
		over, err := wf.Trigger(ctx, json.RawMessage(`{"items":[1,2,3,4,5,6]}`))
		if err != nil {
			t.Fatal(err)
		}
		h.RunUntilIdle()
		if got := h.Steps(ok.ID)["each"]; got != runtime.TaskCompleted {
			t.Errorf("map of 5 items is %s, want COMPLETED", got)
		}
		res := h.Result(over.ID)
		if res.Status != runtime.RunFailed || res.Failure == nil || res.Failure.Step != "each" ||
			!strings.Contains(res.Failure.Error, "forEach of step each has 6 items, over the limit of 5 (Config.SizeLimits.MaxMapItems)") {
			t.Fatalf("map of 6 items: run %s, failure %+v", res.Status, res.Failure)
		}
		if items := h.Items(over.ID, "each"); len(items) != 0 {
			t.Errorf("the refused map started %d item runs", len(items))
		}
		if got := ran.of("each") - before; got != 5 {
			t.Errorf("items ran %d times, want 5 (the map that fits)", got)
		}
	})

	t.Run("events over the limits are refused", func(t *testing.T) {
		_, err := wf.Send(ctx, "poked", "k", json.RawMessage(`{"b":`+string(blob(mib))+`}`))
		overLimit(t, "payload of 1 MiB and a bit", err, "payload of event poked", "MaxEventBytes", runtime.ErrInvalidEvent)
		_, err = wf.Send(ctx, "poked", "k", json.RawMessage(`{"b":`+string(nested(64))+`}`))
		overLimit(t, "payload 65 deep", err, "payload of event poked", "MaxDepth", runtime.ErrInvalidEvent)
		_, err = wf.Send(ctx, "poked", "k", nil, runtime.WithTenant(strings.Repeat("t", 256)))
		overLimit(t, "tenant of 256 bytes", err, "tenant", "MaxTenantBytes")
		if _, err := wf.Send(ctx, strings.Repeat("p", 10_000), "k", nil); err == nil || len(err.Error()) > 200 {
			t.Errorf("an unknown event of 10,000 bytes: %.300v, want a brief error", err)
		}
		if n, err := wf.Send(ctx, "poked", "k", json.RawMessage(`{"b":`+string(nested(63))+`}`)); err != nil {
			t.Errorf("payload 64 deep: %v", err)
		} else if n == 0 {
			t.Errorf("payload 64 deep woke no wait")
		}
	})

	t.Run("schedules over the limits are refused", func(t *testing.T) {
		for _, c := range []struct {
			what, name string
			input      json.RawMessage
			opts       []runtime.ScheduleOption
			want       string
		}{
			{"tenant", "s", nil, []runtime.ScheduleOption{runtime.WithScheduleTenant(strings.Repeat("t", 256))}, "Config.SizeLimits.MaxTenantBytes"},
			{"input", "s", inputWith(blob(mib)), nil, "Config.SizeLimits.MaxInputBytes"},
			{"name", strings.Repeat("n", 10_000), nil, nil, "name is 10000 bytes"},
			{"time zone", "s", nil, []runtime.ScheduleOption{runtime.WithTimezone(strings.Repeat("z", 10_000))}, "time zone is 10000 bytes"},
			{"cron", "s", nil, nil, "cron expression is 100000 bytes"},
		} {
			cron := "@hourly"
			if c.what == "cron" {
				cron = strings.Repeat("* ", 50_000)
			}
			_, err := wf.CreateSchedule(ctx, c.name, cron, c.input, c.opts...)
			if !errors.Is(err, runtime.ErrInvalidSchedule) || !strings.Contains(err.Error(), c.want) || len(err.Error()) > 400 {
				t.Errorf("%s: %v, want a brief ScheduleError with %q", c.what, err, c.want)
			}
		}
		if list, err := h.Engine.Schedules(ctx, wf.Name()); err != nil || len(list) != 0 {
			t.Errorf("schedules after refusals: %v, %v", list, err)
		}
		// The longest name whose runs' keys, trellis:schedule:<name>:<tick>,
		// fit in 512 bytes.
		if _, err := wf.CreateSchedule(ctx, strings.Repeat("n", 474), "@hourly", nil); err != nil {
			t.Errorf("a name of 474 bytes: %v", err)
		}
		if _, err := wf.CreateSchedule(ctx, strings.Repeat("n", 475), "@hourly", nil); !errors.Is(err, runtime.ErrInvalidSchedule) {
			t.Errorf("a name of 475 bytes: %v, want refused", err)
		}
	})
}

// A step's error of any length is kept cut to MaxErrorBytes, on both
// stores.
func TestLongStepErrorsMemory(t *testing.T) { testLongStepErrors(t, trellistest.New(t)) }

func TestLongStepErrorsPostgres(t *testing.T) {
	testLongStepErrors(t, trellistest.New(t, trellistest.WithStore(pgstore.New(pgtest.Pool(t)))))
}

func testLongStepErrors(t *testing.T, h *trellistest.Harness) {
	retry := runtime.DefaultRetryPolicy()
	retry.MaxRetries = 1
	spec := &runtime.WorkflowSpec{Name: "noisy", InputSchema: `{"type":"object"}`,
		Steps: []runtime.StepSpec{{Name: "shout", Retry: retry}}}
	// 1 MiB of "é": two bytes each, so that a cut in the middle of one
	// would leave invalid UTF-8.
	long := strings.Repeat("é", 1<<19)
	wf, err := h.Engine.Register(spec, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"shout": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) {
			return nil, errors.New("x" + long)
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := wf.Trigger(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	h.Advance(time.Minute)
	res := h.Result(ref.ID)
	if res.Status != runtime.RunFailed || res.Failure == nil {
		t.Fatalf("run %s, failure %+v; want FAILED", res.Status, res.Failure)
	}
	msg := res.Failure.Error
	const note = "… (cut: the error was 1048577 bytes, over Config.SizeLimits.MaxErrorBytes)"
	if !strings.HasPrefix(msg, "x"+long[:8190]) || !strings.HasSuffix(msg, note) || len(msg) > 8192+len(note) || !utf8.ValidString(msg) {
		t.Errorf("failure is %d bytes, ending %q; want the first 8 KiB, cut at a character, and the note", len(msg), msg[max(0, len(msg)-100):])
	}
	for _, ev := range h.Events(ref.ID) {
		if len(ev.Detail) > 8192+len(note) {
			t.Errorf("%s event's detail is %d bytes", ev.Type, len(ev.Detail))
		}
	}
}

func TestSizeLimitsConfig(t *testing.T) {
	e, err := runtime.New(runtime.Config{Store: memstore.New(), SizeLimits: runtime.SizeLimits{MaxDepth: 8}})
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.SizeLimits{MaxInputBytes: 1 << 20, MaxOutputBytes: 1 << 20, MaxEventBytes: 1 << 20, MaxDepth: 8,
		MaxMapItems: 10_000, MaxTenantBytes: 255, MaxIdempotencyKeyBytes: 512, MaxErrorBytes: 8 << 10}
	if got := e.Config().SizeLimits; got != want {
		t.Errorf("SizeLimits = %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		limits runtime.SizeLimits
		want   string
	}{
		{runtime.SizeLimits{MaxInputBytes: -1}, "SizeLimits.MaxInputBytes is -1"},
		{runtime.SizeLimits{MaxTenantBytes: 2000}, "SizeLimits.MaxTenantBytes is 2000; it may be at most 1024"},
		{runtime.SizeLimits{MaxIdempotencyKeyBytes: 1025}, "SizeLimits.MaxIdempotencyKeyBytes is 1025"},
	} {
		_, err := runtime.New(runtime.Config{Store: memstore.New(), SizeLimits: c.limits})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.limits, err, c.want)
		}
	}
}

// A workflow file's schedule whose runs every trigger would refuse is
// refused when the workflow is registered.
func TestSizeLimitsOfFileSchedules(t *testing.T) {
	h := trellistest.New(t, trellistest.WithConfig(func(c *runtime.Config) { c.SizeLimits.MaxInputBytes = 100 }))
	spec := boundedSpec()
	spec.Schedules = []runtime.ScheduleSpec{
		{Name: "fine", Cron: "@hourly", Tenant: "acme"},
		{Name: "wide", Cron: "@hourly", Tenant: strings.Repeat("t", 256)},
		{Name: "big", Cron: "@hourly", Input: `{"blob":` + string(blob(100)) + `}`},
	}
	_, err := h.Engine.Register(spec, boundedHandlers(&tally{}))
	for _, want := range []string{
		"registering workflow bounded: ",
		"schedule wide: tenant is 256 bytes, over the limit of 255 (Config.SizeLimits.MaxTenantBytes)",
		"schedule big: input is 109 bytes, over the limit of 100 (Config.SizeLimits.MaxInputBytes)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Register: %v, want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "schedule fine") {
		t.Errorf("Register: %v; schedule fine is within the limits", err)
	}
}

// An input under the size limit may still hold a huge value its schema
// refuses, or a problem for each of many items: the error stays brief,
// while InputError.Problems lists every problem.
func TestInputErrorsStayBrief(t *testing.T) {
	h := trellistest.New(t)
	wf, err := h.Engine.Workflow(&runtime.WorkflowSpec{Name: "strict",
		InputSchema: `{"type":"object","properties":{"email":{"type":"string","format":"email"},
			"items":{"type":"array","items":{"type":"integer"}}},"additionalProperties":false}`,
		Steps: []runtime.StepSpec{{Name: "s"}}})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("z", 100_000)
	for _, c := range []struct {
		what, input, want string
		problems          int
	}{
		{"a huge value its format refuses", `{"email":"` + big + `"}`, `…" is not a valid "email"`, 1},
		{"a huge property name", `{"` + big + `":1}`, "' not allowed", 1},
		{"a thousand bad items", `{"items":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 1000), ",") + `]}`, "; and 980 more", 1000},
	} {
		_, err := wf.Trigger(t.Context(), json.RawMessage(c.input))
		var ie *runtime.InputError
		if !errors.As(err, &ie) || len(ie.Problems) != c.problems {
			t.Errorf("%s: %.300v, want an InputError with %d problems", c.what, err, c.problems)
			continue
		}
		if msg := err.Error(); len(msg) > 2000 || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d bytes: %.300q…, want a brief error with %q", c.what, len(msg), msg, c.want)
		}
	}
}

// A map step's item is the input of a run: one over MaxInputBytes (CEL
// may build it bigger than anything the run was given) fails the map,
// starting no item.
func TestMapItemOverInputLimitMemory(t *testing.T) {
	testMapItemOverInputLimit(t, trellistest.New(t, inputBytes(100)))
}

func TestMapItemOverInputLimitPostgres(t *testing.T) {
	testMapItemOverInputLimit(t, trellistest.New(t, inputBytes(100), trellistest.WithStore(pgstore.New(pgtest.Pool(t)))))
}

func inputBytes(n int) trellistest.Option {
	return trellistest.WithConfig(func(c *runtime.Config) { c.SizeLimits.MaxInputBytes = n })
}

func testMapItemOverInputLimit(t *testing.T, h *trellistest.Harness) {
	ran := &tally{}
	wf, err := h.Engine.Register(&runtime.WorkflowSpec{Name: "doubler",
		InputSchema: `{"type":"object","required":["s"],"properties":{"s":{"type":"string"}}}`,
		Steps: []runtime.StepSpec{{Name: "each",
			ForEach: &runtime.ForEachSpec{Items: "[input.s, input.s + input.s]", ItemSchema: `{"type":"string"}`}}},
	}, runtime.Handlers{Steps: map[string]runtime.StepFunc{
		"each": func(context.Context, *runtime.StepRequest) (json.RawMessage, error) { ran.add("each"); return nil, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The input is 68 bytes; the second item, 122.
	ref, err := wf.Trigger(t.Context(), json.RawMessage(`{"s":"`+strings.Repeat("s", 60)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle()
	res := h.Result(ref.ID)
	const want = "item 1 of forEach of step each is 122 bytes, over the limit of 100 (Config.SizeLimits.MaxInputBytes)"
	if res.Status != runtime.RunFailed || res.Failure == nil || res.Failure.Error != want {
		t.Fatalf("run %s, failure %+v; want FAILED with %q", res.Status, res.Failure, want)
	}
	if n := ran.of("each"); n != 0 || len(h.Items(ref.ID, "each")) != 0 {
		t.Errorf("%d items ran, %d item runs; want none", n, len(h.Items(ref.ID, "each")))
	}
}
