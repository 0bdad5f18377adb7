package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// awaitA claims step A, a wait step, of a new diamond run (tenant acme),
// and makes it wait for event "done", keyed when key is not empty, until
// deadline (zero for none). It returns the run and the claim.
func (f *fixture) awaitA(key string, deadline time.Time) (uuid.UUID, store.ClaimedTask) {
	f.t.Helper()
	id := f.createDiamond(runOpts{kindA: store.KindWait, tenant: "acme"})
	a := f.claimOne(id, stepA)
	aw := store.Await{Attempt: attempt(a), Event: "done", Keyed: key != "", EventKey: key, Deadline: deadline}
	if res := f.finish(store.Results{Awaits: []store.Await{aw}}); len(res.Stale) > 0 {
		f.t.Fatalf("Await was stale: %v", res.Stale)
	}
	return id, a
}

// send sends events and returns how many waits each woke.
func (f *fixture) send(events ...store.NewEvent) []int {
	f.t.Helper()
	res, err := f.s.SendEvents(f.ctx, store.SendEvents{Events: events, Now: f.now})
	if err != nil {
		f.t.Fatalf("SendEvents: %v", err)
	}
	out := make([]int, len(res))
	for i, r := range res {
		out[i] = r.Woken
	}
	return out
}

func byKey(key, payload string) store.NewEvent {
	return store.NewEvent{Workflow: "diamond", Name: "done", Tenant: "acme", Key: key, Payload: []byte(payload)}
}

func toRun(id uuid.UUID, payload string) store.NewEvent {
	return store.NewEvent{Workflow: "diamond", Name: "done", Run: id, Payload: []byte(payload)}
}

// wokenWith claims step A of run id again and checks it comes woken with
// the given output (none for "").
func (f *fixture) wokenWith(id uuid.UUID, output string) {
	f.t.Helper()
	c := f.claimOne(id, stepA)
	if !c.Woken || c.Attempt != 1 {
		f.t.Errorf("step A claimed again with Woken %v attempt %d, want woken in attempt 1", c.Woken, c.Attempt)
	}
	if got := string(f.task(id, stepA).Output); got != output {
		f.t.Errorf("step A's output = %q, want %q", got, output)
	}
}

func testAwaitThenSend(t *testing.T, f *fixture) {
	keyed, _ := f.awaitA("k1", time.Time{})
	plain, _ := f.awaitA("", time.Time{})
	for _, id := range []uuid.UUID{keyed, plain} {
		if got := f.task(id, stepA).Status; got != store.TaskWaiting {
			t.Fatalf("awaiting left step A %s, want WAITING", got)
		}
	}
	f.tick(time.Second)
	// Another key, another tenant, another event: nothing.
	other := byKey("k2", `{"v":0}`)
	elsewhere := byKey("k1", `{"v":0}`)
	elsewhere.Tenant = "umbrella"
	named := byKey("k1", `{"v":0}`)
	named.Name = "started"
	if got := f.send(other, elsewhere, named, toRun(plain, `{"v":0}`)); !slices.Equal(got, []int{0, 0, 0, 1}) {
		t.Fatalf("woken = %v, want only the wait of the run signalled", got)
	}
	f.wokenWith(plain, `{"v":0}`)
	if got := f.send(byKey("k1", `{"v":1}`), byKey("k1", `{"v":2}`)); !slices.Equal(got, []int{1, 0}) {
		t.Fatalf("woken = %v, want the first event to wake the keyed wait, the second nothing", got)
	}
	f.wokenWith(keyed, `{"v":1}`)
	if got, want := f.trail(keyed, stepA), []store.EventType{store.EventQueued, store.EventWaiting, store.EventWoken}; !slices.Equal(got, want) {
		t.Errorf("events of step A = %v, want %v", got, want)
	}
}

func testSendThenAwait(t *testing.T, f *fixture) {
	// An event sent with a key before a run exists is not that run's.
	f.send(byKey("k1", `{"v":0}`))
	f.tick(time.Second)
	id := f.createDiamond(runOpts{kindA: store.KindWait, tenant: "acme"})
	f.tick(time.Second)
	f.send(byKey("k1", `{"v":1}`), toRun(id, `{"v":2}`))
	f.tick(time.Second)
	a := f.claimOne(id, stepA)
	f.finish(store.Results{Awaits: []store.Await{{Attempt: attempt(a), Event: "done", Keyed: true, EventKey: "k1"}}})
	f.wokenWith(id, `{"v":1}`)
	if got, want := f.trail(id, stepA), []store.EventType{store.EventQueued, store.EventWaiting, store.EventWoken}; !slices.Equal(got, want) {
		t.Errorf("events of step A = %v, want %v", got, want)
	}
	// The event sent to the run is the first for an unkeyed wait.
	id2 := f.createDiamond(runOpts{kindA: store.KindWait, tenant: "acme"})
	f.tick(time.Second)
	f.send(toRun(id2, `{"v":3}`), toRun(id2, `{"v":4}`))
	a2 := f.claimOne(id2, stepA)
	f.finish(store.Results{Awaits: []store.Await{{Attempt: attempt(a2), Event: "done"}}})
	f.wokenWith(id2, `{"v":3}`)
}

func testAwaitDeadline(t *testing.T, f *fixture) {
	id, _ := f.awaitA("k1", f.now.Add(time.Minute))
	if n, err := f.fire(f.tick(59*time.Second), 10); err != nil || n != 0 {
		t.Fatalf("fired %d before the deadline, %v", n, err)
	}
	if n, err := f.fire(f.tick(time.Second), 10); err != nil || n != 1 {
		t.Fatalf("fired %d at the deadline, %v", n, err)
	}
	// Too late: the wait is over.
	if got := f.send(byKey("k1", `{"v":1}`)); got[0] != 0 {
		t.Errorf("an event after the deadline woke %d waits", got[0])
	}
	f.wokenWith(id, "")
	// An event that comes first drops the deadline.
	id2, _ := f.awaitA("k2", f.now.Add(time.Minute))
	f.send(byKey("k2", `{"v":2}`))
	if n, err := f.fire(f.tick(time.Hour), 10); err != nil || n != 0 {
		t.Errorf("fired %d timers of a wait an event ended, %v", n, err)
	}
	f.wokenWith(id2, `{"v":2}`)
}

func testAwaitEndsWithRun(t *testing.T, f *fixture) {
	id, _ := f.awaitA("k1", f.now.Add(time.Minute))
	if ok, err := f.cancelOne(id, f.tick(time.Second)); !ok || err != nil {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	if got := f.send(byKey("k1", `{"v":1}`)); got[0] != 0 {
		t.Errorf("an event woke %d waits of a cancelled run", got[0])
	}
	if n, err := f.fire(f.tick(time.Hour), 10); err != nil || n != 0 {
		t.Errorf("fired %d timers of a cancelled run, %v", n, err)
	}
	if got := f.task(id, stepA).Status; got != store.TaskCancelled {
		t.Errorf("step A is %s, want CANCELLED", got)
	}
}

func testSendToUnknownRun(t *testing.T, f *fixture) {
	id, _ := f.awaitA("", time.Time{})
	for _, ev := range []store.NewEvent{toRun(uuid.Must(uuid.NewV7()), `{}`), {Workflow: "other", Name: "done", Run: id, Payload: []byte(`{}`)}} {
		_, err := f.s.SendEvents(f.ctx, store.SendEvents{Events: []store.NewEvent{byKey("k1", `{}`), ev}, Now: f.now})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("sending to %s of %s: %v, want ErrNotFound", ev.Run, ev.Workflow, err)
		}
	}
	// Nothing of a refused batch was kept.
	waiting, _ := f.awaitA("k1", time.Time{})
	if got := f.task(waiting, stepA).Status; got != store.TaskWaiting {
		t.Errorf("a wait began %s, want WAITING: an event of a refused batch was kept", got)
	}
	if got := f.task(id, stepA).Status; got != store.TaskWaiting {
		t.Errorf("the run's wait is %s, want WAITING", got)
	}
}

// testSendRacesAwait sends each wait's event while the wait begins, both
// at once from goroutines of their own: whichever comes second must find
// the other, so that every wait ends woken, none left waiting for an
// event already sent.
func testSendRacesAwait(t *testing.T, f *fixture) {
	const n = 40
	var claims []store.ClaimedTask
	for range n {
		id := f.createDiamond(runOpts{kindA: store.KindWait, tenant: "acme"})
		claims = append(claims, f.claimOne(id, stepA))
	}
	f.tick(time.Second)
	key := func(i int) string { return fmt.Sprintf("k%d", i) }
	start := make(chan struct{})
	errs := make(chan error, 2*n)
	for i, c := range claims {
		go func() {
			<-start
			aw := store.Await{Attempt: attempt(c), Event: "done", Keyed: true, EventKey: key(i)}
			_, err := f.s.Finish(f.ctx, store.Results{Now: f.now, Awaits: []store.Await{aw}})
			errs <- err
		}()
		go func() {
			<-start
			ev := byKey(key(i), fmt.Sprintf(`{"v":%d}`, i))
			_, err := f.s.SendEvents(f.ctx, store.SendEvents{Events: []store.NewEvent{ev}, Now: f.now})
			errs <- err
		}()
	}
	close(start)
	for range 2 * n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range claims {
		task := f.task(c.Key.Run, stepA)
		if task.Status != store.TaskQueued || string(task.Output) != fmt.Sprintf(`{"v":%d}`, i) {
			t.Errorf("wait %d is %s with output %s, want QUEUED (woken) with its event", i, task.Status, task.Output)
		}
	}
}

func testPurgeEvents(t *testing.T, f *fixture) {
	id := f.createDiamond(runOpts{kindA: store.KindWait, tenant: "acme"})
	f.send(byKey("k1", `{"v":1}`), toRun(id, `{"v":0}`))
	f.tick(time.Hour)
	f.send(byKey("k1", `{"v":2}`), byKey("k2", `{"v":3}`))
	n, err := f.s.PurgeEvents(f.ctx, f.now.Add(-time.Minute), 10)
	if err != nil || n != 1 {
		t.Fatalf("PurgeEvents = %d, %v; want the one keyed event sent an hour ago", n, err)
	}
	if n, err := f.s.PurgeEvents(f.ctx, f.now.Add(-time.Minute), 10); err != nil || n != 0 {
		t.Fatalf("PurgeEvents again = %d, %v; want none left that old", n, err)
	}
	a := f.claimOne(id, stepA)
	f.finish(store.Results{Awaits: []store.Await{{Attempt: attempt(a), Event: "done", Keyed: true, EventKey: "k1"}}})
	// The event sent to the run is kept with the run: it is the first.
	f.wokenWith(id, `{"v":0}`)
	f.tick(time.Second)
	id2 := f.createDiamond(runOpts{kindA: store.KindWait, tenant: "acme"})
	f.send(byKey("k2", `{"v":4}`))
	if n, err := f.s.PurgeEvents(f.ctx, f.tick(time.Hour), 1); err != nil || n != 1 {
		t.Fatalf("PurgeEvents with limit 1 = %d, %v", n, err)
	}
	a2 := f.claimOne(id2, stepA)
	f.finish(store.Results{Awaits: []store.Await{{Attempt: attempt(a2), Event: "done", Keyed: true, EventKey: "k2"}}})
	// Oldest first: k1's {"v":2} went, k2's two remain ({"v":3} predates the run).
	f.wokenWith(id2, `{"v":4}`)
}

// testSendRepeat sends events with IDs: a second event with the ID of
// one the store holds, for the same workflow, tenant and name (whatever
// its key), is a repeat, stored nowhere and waking nothing, until the
// first is purged.
func testSendRepeat(t *testing.T, f *fixture) {
	withID := func(key, id, payload string) store.NewEvent {
		ev := byKey(key, payload)
		ev.ID = id
		return ev
	}
	sendAll := func(events ...store.NewEvent) []store.SentEvent {
		t.Helper()
		res, err := f.s.SendEvents(f.ctx, store.SendEvents{Events: events, Now: f.now})
		if err != nil {
			t.Fatalf("SendEvents: %v", err)
		}
		return res
	}
	first, _ := f.awaitA("k1", time.Time{})
	f.tick(time.Second)
	// The second of one batch is a repeat of the first.
	got := sendAll(withID("k1", "e1", `{"v":1}`), withID("k1", "e1", `{"v":2}`))
	if want := []store.SentEvent{{Woken: 1}, {Repeat: true}}; !slices.Equal(got, want) {
		t.Fatalf("sent %+v, want %+v", got, want)
	}
	f.wokenWith(first, `{"v":1}`)

	// A wait that begins after a repeat does not receive it: the repeat
	// was not kept.
	f.tick(time.Second)
	later := f.createDiamond(runOpts{kindA: store.KindWait, tenant: "acme"})
	f.tick(time.Second)
	if got := sendAll(withID("k1", "e1", `{"v":3}`), withID("k2", "e1", `{"v":4}`)); !slices.Equal(got, []store.SentEvent{{Repeat: true}, {Repeat: true}}) {
		t.Fatalf("sent the same ID again, with its key and another: %+v, want two repeats", got)
	}
	a := f.claimOne(later, stepA)
	f.finish(store.Results{Awaits: []store.Await{{Attempt: attempt(a), Event: "done", Keyed: true, EventKey: "k1"}}})
	if got := f.task(later, stepA).Status; got != store.TaskWaiting {
		t.Fatalf("a wait that began after a repeat is %s, want WAITING", got)
	}

	// The same ID in another tenant, or of another event, is another
	// event; so is an event without an ID.
	elsewhere := withID("k1", "e1", `{}`)
	elsewhere.Tenant = "umbrella"
	named := withID("k1", "e1", `{}`)
	named.Name = "started"
	if got := sendAll(elsewhere, named, byKey("k9", `{}`), byKey("k9", `{}`)); slices.ContainsFunc(got, func(s store.SentEvent) bool { return s.Repeat }) {
		t.Fatalf("sent %+v, want no repeat", got)
	}

	// Purged, the first is forgotten: its ID may come again.
	f.tick(time.Hour)
	if _, err := f.s.PurgeEvents(f.ctx, f.now.Add(-time.Minute), 0); err != nil {
		t.Fatal(err)
	}
	if got := sendAll(withID("k1", "e1", `{"v":5}`)); got[0].Repeat || got[0].Woken != 1 {
		t.Fatalf("sent the ID of a purged event: %+v, want it delivered to the wait", got)
	}
	f.wokenWith(later, `{"v":5}`)
}
