package dashboard_test

import (
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/schema/spec"
)

// signupSchema is an input schema with a field of every kind the form
// makes.
const signupSchema = `{
  "type": "object",
  "required": ["email", "plan"],
  "properties": {
    "email": {"type": "string", "format": "email", "description": "Where the welcome mail goes."},
    "plan": {"enum": ["free", "team", "enterprise"]},
    "seats": {"type": "integer", "minimum": 1},
    "discount": {"type": "number"},
    "trial": {"type": "boolean"},
    "token": {"type": "string", "x-trellis-sensitive": true},
    "address": {"type": "object", "required": ["country"], "properties": {
      "country": {"type": "string", "minLength": 2, "maxLength": 2},
      "city": {"type": "string"}
    }},
    "tags": {"type": "array", "items": {"type": "string"}}
  },
  "additionalProperties": false
}`

// signup registers the signup workflow, whose one step returns its
// input, on the bundle's engine, and stores it with a first run.
func (b *bundle) signup() *runtime.Workflow {
	b.t.Helper()
	w, err := b.h.Engine.Register(&runtime.WorkflowSpec{Name: "signup", InputSchema: signupSchema, Steps: []spec.Step{{Name: "welcome"}}},
		runtime.Handlers{Steps: map[string]runtime.StepFunc{
			"welcome": func(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) { return req.Input, nil },
		}})
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := w.Trigger(b.t.Context(), json.RawMessage(`{"email":"first@example.com","plan":"free"}`)); err != nil {
		b.t.Fatal(err)
	}
	b.h.RunUntilIdle()
	return w
}

// runInput is the input of the run a trigger redirected to.
func (b *bundle) runInput(location string) (runtime.RunID, map[string]any, string) {
	b.t.Helper()
	id, err := runtime.ParseRunID(strings.TrimPrefix(strings.SplitN(location, "?", 2)[0], "/runs/"))
	if err != nil {
		b.t.Fatalf("redirected to %q, not a run: %v", location, err)
	}
	run, err := ops.New(b.h.Engine).GetRun(b.t.Context(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(run.Input, &in); err != nil {
		b.t.Fatal(err)
	}
	return id, in, run.Tenant
}

// The workflow page's form has a field per property, required ones
// marked; what it posts is validated as the API validates it, each
// problem shown next to its field, and a valid input starts a run.
func TestTriggerForm(t *testing.T) {
	b := setup(t, dashboard.Options{})
	b.signup()
	page := b.page("/workflows/signup", http.StatusOK)
	for _, want := range []string{
		`id="trigger"`, `name="input/email"`, `name="input/plan"`, `<option value="&#34;team&#34;">`, `name="input/seats" value="" inputmode="numeric"`,
		`name="input/trial"`, `name="input/token" value="" type="password"`, `<fieldset class="field-group" data-field="input.address">`,
		`name="input/address/country"`, `<textarea name="input/tags"`, `name="input-json"`, `name="tenant" value="default"`, `name="idempotency-key"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the trigger form lacks %s", want)
		}
	}
	if strings.Count(page, `title="required"`) != 3 { // email, plan, address.country
		t.Errorf("the form marks %d fields required, want 3", strings.Count(page, `title="required"`))
	}
	token := b.token("/workflows/signup")
	post := func(form url.Values) (int, string, string) {
		t.Helper()
		form.Set("csrf", token)
		return b.post("/workflows/signup/runs", form, nil)
	}

	// Wrong types and a missing required field: the API's problems, by field.
	code, _, body := post(url.Values{"input/email": {"not-an-email"}, "input/seats": {"two"}, "input/address/city": {"Lyon"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="trigger-problem"`) {
		t.Fatalf("an invalid input answered %d, want 422 with the problems", code)
	}
	for field, want := range map[string]string{
		"input.email": "email", "input.seats": "integer", "input.plan": "required", "input.address.country": "required",
	} {
		i := strings.Index(body, `data-field="`+field+`"`)
		if i < 0 {
			t.Errorf("no field %s on the refused form", field)
			continue
		}
		end := strings.Index(body[i:], "</label>")
		if field := body[i : i+end]; !strings.Contains(field, `class="field-problem err"`) || !strings.Contains(strings.ToLower(field), want) {
			t.Errorf("field %s shows no problem about %q: %s", field, want, field)
		}
	}
	if !strings.Contains(body, `value="Lyon"`) {
		t.Error("the refused form lost what was typed")
	}
	if got := b.page("/runs?workflow=signup", http.StatusOK); strings.Count(got, `class="mono id"`) != 1 {
		t.Error("a refused trigger created a run")
	}

	// A JSON area that is not JSON is its field's problem.
	if code, _, body := post(url.Values{"input/email": {"a@example.com"}, "input/plan": {`"team"`}, "input/tags": {"[1"}}); code != http.StatusUnprocessableEntity ||
		!strings.Contains(body, "not valid JSON") {
		t.Errorf("tags that are not JSON answered %d, want 422 naming the field", code)
	}

	// A valid input: a run, shown.
	code, location, _ := post(url.Values{
		"input/email": {"ann@example.com"}, "input/plan": {`"team"`}, "input/seats": {"12"}, "input/discount": {"0.5"}, "input/trial": {"true"},
		"input/address/country": {"FR"}, "input/tags": {`["vip"]`}, "tenant": {"acme"}, "idempotency-key": {"signup-ann"},
	})
	if code != http.StatusSeeOther || !strings.HasSuffix(location, "?done=triggered") {
		t.Fatalf("a valid trigger answered %d to %q, want 303 to the new run", code, location)
	}
	id, in, tenant := b.runInput(location)
	want := map[string]any{"email": "ann@example.com", "plan": "team", "seats": 12.0, "discount": 0.5, "trial": true, "address": map[string]any{"country": "FR"}, "tags": []any{"vip"}}
	if got, _ := json.Marshal(in); string(got) != string(must(json.Marshal(want))) || tenant != "acme" {
		t.Errorf("the run's input is %s for tenant %s, want %s for acme", got, tenant, must(json.Marshal(want)))
	}
	if page := b.page(location, http.StatusOK); !strings.Contains(page, "Triggered:") {
		t.Error("the new run's page does not say it was triggered")
	}
	// The same idempotency key: the same run.
	code, again, _ := post(url.Values{"input/email": {"ann@example.com"}, "input/plan": {`"team"`}, "tenant": {"acme"}, "idempotency-key": {"signup-ann"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(again, "/runs/"+id.String()) || !strings.HasSuffix(again, "?done=existing") {
		t.Errorf("a second trigger with the key answered %d to %q, want the first run", code, again)
	}
	// The whole input as JSON, which is used instead of the fields.
	code, location, _ = post(url.Values{"input/email": {"ignored"}, "input-json": {`{"email":"bo@example.com","plan":"free"}`}})
	if code != http.StatusSeeOther {
		t.Fatalf("a trigger with the input as JSON answered %d", code)
	}
	if _, in, tenant := b.runInput(location); in["email"] != "bo@example.com" || tenant != runtime.DefaultTenant {
		t.Errorf("the JSON input's run has %v for tenant %s", in, tenant)
	}
}

// Hostile input gets the API's error, never a 500, and starts nothing.
func TestTriggerFormHostileInput(t *testing.T) {
	b := setup(t, dashboard.Options{})
	b.signup()
	token := b.token("/workflows/signup")
	huge := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name string
		form url.Values
		code int
		want string
	}{
		{"extra fields", url.Values{"input-json": {`{"email":"a@example.com","plan":"free","admin":true}`}}, 422, "admin"},
		{"wrong types", url.Values{"input-json": {`{"email":5,"plan":["free"]}`}}, 422, "input.email"},
		{"not JSON", url.Values{"input-json": {`{"email":`}}, 422, "not valid JSON"},
		{"not an object", url.Values{"input-json": {`[]`}}, 422, "input"},
		{"deep", url.Values{"input-json": {strings.Repeat("[", 100_000)}}, 422, "MaxDepth"},
		{"huge value, within the form's bound", url.Values{"input/email": {huge}, "input/plan": {`"free"`}}, 422, "MaxInputBytes"},
		{"over the form's bound", url.Values{"input/email": {huge + huge}}, 413, "at most"},
		{"tenant not UTF-8", url.Values{"input-json": {`{"email":"a@example.com","plan":"free"}`}, "tenant": {"ac\xffme"}}, 422, "not valid UTF-8"},
		{"tenant with NUL", url.Values{"input-json": {`{"email":"a@example.com","plan":"free"}`}, "tenant": {"ac\x00me"}}, 422, "NUL"},
		{"huge tenant", url.Values{"input-json": {`{"email":"a@example.com","plan":"free"}`}, "tenant": {strings.Repeat("t", 300)}}, 422, "MaxTenantBytes"},
		{"huge key", url.Values{"input-json": {`{"email":"a@example.com","plan":"free"}`}, "idempotency-key": {strings.Repeat("k", 600)}}, 422, "MaxIdempotencyKeyBytes"},
		{"markup", url.Values{"input-json": {`{"email":"<script>alert(1)</script>","plan":"free"}`}}, 422, "input.email"},
	} {
		tc.form.Set("csrf", token)
		code, _, body := b.post("/workflows/signup/runs", tc.form, nil)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d, want %d saying %q", tc.name, code, tc.code, tc.want)
		}
		if strings.Contains(body, "<script>alert") {
			t.Errorf("%s: the page echoes markup unescaped", tc.name)
		}
	}
	if got := b.page("/runs?workflow=signup", http.StatusOK); strings.Count(got, `class="mono id"`) != 1 {
		t.Error("hostile triggers created runs")
	}
}

// The form is hidden, and its POST refused, without a CSRF token, on a
// read-only dashboard and for read-only users; a user who sees some
// tenants triggers runs of those only.
func TestTriggerFormRefused(t *testing.T) {
	b := setup(t, dashboard.Options{Authenticate: testUsers(t).Authenticate})
	b.signup()
	valid := func(token string) url.Values {
		return url.Values{"csrf": {token}, "input-json": {`{"email":"a@example.com","plan":"free"}`}}
	}
	alice, bob, carol := b.as("alice", "ecila"), b.as("bob", "bob"), b.as("carol", "lorac")
	if code, _, _ := alice.post("/workflows/signup/runs", valid("forged"), nil); code != http.StatusForbidden {
		t.Errorf("a trigger without the page's token answered %d, want 403", code)
	}
	if code, _, _ := alice.post("/workflows/signup/runs", valid(alice.token("/workflows/signup")), map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("a trigger from another origin answered %d, want 403", code)
	}
	if page := bob.page("/workflows/signup", http.StatusOK); strings.Contains(page, `id="trigger"`) || strings.Contains(page, "/workflows/signup/runs") {
		t.Error("a read-only user is offered the trigger form")
	}
	if code, _, body := bob.post("/workflows/signup/runs", valid(alice.token("/workflows/signup")), nil); code != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Errorf("a read-only user's trigger answered %d, want 403", code)
	}
	page := carol.page("/workflows/signup", http.StatusOK)
	if !strings.Contains(page, `name="tenant" value="acme" readonly`) {
		t.Error("carol's form does not fix the tenant to acme, hers")
	}
	token := carol.token("/workflows/signup")
	form := valid(token)
	form.Set("tenant", "initech")
	if code, _, body := carol.post("/workflows/signup/runs", form, nil); code != http.StatusForbidden || !strings.Contains(body, "you trigger runs of acme only") {
		t.Errorf("carol's trigger for initech answered %d, want 403", code)
	}
	code, location, _ := carol.post("/workflows/signup/runs", valid(token), nil)
	if code != http.StatusSeeOther {
		t.Fatalf("carol's trigger answered %d, want 303", code)
	}
	if _, _, tenant := b.runInput(location); tenant != "acme" {
		t.Errorf("carol's run is initech's... of tenant %s, want acme", tenant)
	}
	if code, _, _ := alice.post("/workflows/nosuch/runs", valid(alice.token("/workflows/signup")), nil); code != http.StatusNotFound {
		t.Errorf("a trigger of a workflow never stored answered %d, want 404", code)
	}

	ro := setup(t, dashboard.Options{ReadOnly: true})
	ro.signup()
	if page := ro.page("/workflows/signup", http.StatusOK); strings.Contains(page, `id="trigger"`) {
		t.Error("a read-only dashboard offers the trigger form")
	}
	if code, _, _ := ro.post("/workflows/signup/runs", valid("x"), nil); code != http.StatusForbidden {
		t.Errorf("a read-only dashboard answered a trigger %d, want 403", code)
	}
}

// A dashboard whose engine has no code for the workflow (trellis
// dashboard's) triggers runs of its stored version, which a worker that
// registered it runs.
func TestTriggerFromAProcessWithoutTheWorkflow(t *testing.T) {
	b := setup(t, dashboard.Options{})
	b.signup()
	viewer, err := runtime.New(runtime.Config{Store: b.h.Store, Clock: b.h.Clock})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ops.New(viewer).Trigger(t.Context(), "signup", json.RawMessage(`{"email":"c@example.com","plan":"team"}`))
	if err != nil {
		t.Fatal(err)
	}
	b.h.RunUntilIdle()
	if res := b.h.Result(ref.ID); res.Status != runtime.RunCompleted {
		t.Errorf("the run triggered without the workflow's code is %s, want COMPLETED by the worker", res.Status)
	}
	if _, err := ops.New(viewer).Trigger(t.Context(), "signup", json.RawMessage(`{"plan":"gold"}`)); err == nil || !strings.Contains(err.Error(), "input.email") {
		t.Errorf("an invalid input through ops.Trigger: %v, want the API's problems", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The trigger form's tags, a key=value a line, tag the run; lines that
// are not tags, and tags the API refuses, are shown on the form, which
// keeps what was typed, and trigger nothing.
func TestTriggerFormTags(t *testing.T) {
	b := setup(t, dashboard.Options{})
	b.signup()
	if page := b.page("/workflows/signup", http.StatusOK); !strings.Contains(page, `<textarea name="tags"`) {
		t.Fatal("the trigger form has no tags")
	}
	token := b.token("/workflows/signup")
	post := func(tags string) (int, string, string) {
		t.Helper()
		return b.post("/workflows/signup/runs", url.Values{"csrf": {token}, "input-json": {`{"email":"a@example.com","plan":"free"}`}, "tags": {tags}}, nil)
	}
	code, location, _ := post("customer=acme corp\r\n\r\nchannel=dashboard\r\n")
	if code != http.StatusSeeOther {
		t.Fatalf("a trigger with tags answered %d, want 303", code)
	}
	id, _, _ := b.runInput(location)
	res, err := b.h.Engine.Result(t.Context(), id)
	if err != nil || res.Tags["customer"] != "acme corp" || res.Tags["channel"] != "dashboard" || len(res.Tags) != 2 {
		t.Errorf("the run's tags = %v, %v; want customer=acme corp and channel=dashboard", res.Tags, err)
	}
	for tags, want := range map[string]string{
		"customer":                "tags, line 1: give key=value",
		"a=1\nb=2\na=3":           "tags, line 3: tag a is given twice",
		"Customer=acme":           `tag key &#34;Customer&#34; has &#34;C&#34; at byte 0`,
		"note=<script>x</script>": "",
	} {
		code, _, body := post(tags)
		if want == "" { // a value may hold anything printable: escaped where shown
			if code != http.StatusSeeOther {
				t.Errorf("tags %q answered %d, want 303", tags, code)
			}
			continue
		}
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, want) {
			t.Errorf("tags %q answered %d, want 422 saying %s", tags, code, want)
		}
		if !strings.Contains(body, `<textarea name="tags" rows="2" spellcheck="false" class="mono">`+template.HTMLEscapeString(tags)) {
			t.Errorf("the refused form lost the tags typed: %q", tags)
		}
	}
}
