package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// testRunsKeepTags: a run's tags come back from every read of it, a run
// without tags has none, and a second trigger under an idempotency key
// keeps the first run's tags.
func testRunsKeepTags(t *testing.T, f *fixture) {
	tags := map[string]string{"customer": "acme", "channel": "web", "note": "ünïcode ✓ \"quoted\""}
	id := f.createDiamond(runOpts{tags: tags, key: "k1"})
	plain := f.createDiamond(runOpts{})
	if got := f.run(id).Tags; !cmp.Equal(got, tags) {
		t.Errorf("GetRun tags = %v, want %v", got, tags)
	}
	if got := f.run(plain).Tags; got != nil {
		t.Errorf("GetRun of a run without tags: tags = %v, want nil", got)
	}
	many, err := f.s.GetRuns(f.ctx, []uuid.UUID{id, plain})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range many {
		want := map[string]string(nil)
		if r.ID == id {
			want = tags
		}
		if !cmp.Equal(r.Tags, want) {
			t.Errorf("GetRuns: run %s tags = %v, want %v", r.ID, r.Tags, want)
		}
	}
	listed := f.listRuns(store.RunQuery{})
	if len(listed) != 2 || !cmp.Equal(listed[1].Tags, tags) || listed[0].Tags != nil {
		t.Errorf("ListRuns tags = %v, want the tagged run's and none", listed)
	}
	again := f.create(runOpts{tags: map[string]string{"customer": "globex"}, key: "k1"})
	if again.Created || again.ID != id {
		t.Fatalf("second trigger under the key = %+v, want run %s, existing", again, id)
	}
	if got := f.run(id).Tags; !cmp.Equal(got, tags) {
		t.Errorf("after a second trigger under the key, tags = %v, want the first's %v", got, tags)
	}
}

// testListRunsByTags: a tag filter keeps the runs carrying every tag of
// it, with the same value, together with the other filters.
func testListRunsByTags(t *testing.T, f *fixture) {
	acmeWeb := f.createDiamond(runOpts{tags: map[string]string{"customer": "acme", "channel": "web"}})
	acmeAPI := f.createDiamond(runOpts{tags: map[string]string{"customer": "acme", "channel": "api"}})
	globex := f.createDiamond(runOpts{tags: map[string]string{"customer": "globex"}, tenant: "other"})
	f.createDiamond(runOpts{})
	for _, tc := range []struct {
		name string
		q    store.RunQuery
		want []uuid.UUID
	}{
		{"one tag", store.RunQuery{Tags: map[string]string{"customer": "acme"}}, []uuid.UUID{acmeAPI, acmeWeb}},
		{"two tags", store.RunQuery{Tags: map[string]string{"customer": "acme", "channel": "web"}}, []uuid.UUID{acmeWeb}},
		{"another value", store.RunQuery{Tags: map[string]string{"customer": "initech"}}, nil},
		{"a value of another key", store.RunQuery{Tags: map[string]string{"channel": "acme"}}, nil},
		{"an empty value is a value", store.RunQuery{Tags: map[string]string{"customer": ""}}, nil},
		{"with a tenant", store.RunQuery{Tags: map[string]string{"customer": "globex"}, Tenant: "other"}, []uuid.UUID{globex}},
		{"with another tenant", store.RunQuery{Tags: map[string]string{"customer": "globex"}, Tenant: "default"}, nil},
		{"a value no text holds", store.RunQuery{Tags: map[string]string{"customer": "a\x00b"}}, nil},
		{"paged", store.RunQuery{Tags: map[string]string{"customer": "acme"}, Limit: 1}, []uuid.UUID{acmeAPI}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(f.listRuns(tc.q)); !cmp.Equal(got, tc.want, cmpopts.EquateEmpty()) {
				t.Errorf("ListRuns(tags %v) = %v, want %v", tc.q.Tags, got, tc.want)
			}
		})
	}
	next := f.listRuns(store.RunQuery{Tags: map[string]string{"customer": "acme"}, After: &store.RunCursor{CreatedAt: f.now, ID: acmeAPI}})
	if got := ids(next); !cmp.Equal(got, []uuid.UUID{acmeWeb}) {
		t.Errorf("the page after %s = %v, want %v", acmeAPI, got, acmeWeb)
	}
}

// testSpawnInheritsTags: the runs a task spawns carry its run's tags,
// their own in the place of the parent's where a key is in both.
func testSpawnInheritsTags(t *testing.T, f *fixture) {
	parent := f.createDiamond(runOpts{kindA: store.KindMap, tags: map[string]string{"customer": "acme", "channel": "web"}})
	a := f.claimOne(parent, stepA)
	kids := elementRuns(2)
	kids[1].Tags = map[string]string{"channel": "batch", "item": "1"}
	if res := f.finish(store.Results{Spawns: []store.Spawn{{Attempt: attempt(a), Runs: kids}}}); len(res.Stale) > 0 {
		t.Fatalf("Spawn was stale: %v", res.Stale)
	}
	want := []map[string]string{
		{"customer": "acme", "channel": "web"},
		{"customer": "acme", "channel": "batch", "item": "1"},
	}
	got := f.children(parent)
	if len(got) != 2 {
		t.Fatalf("%d child runs, want 2", len(got))
	}
	for i, c := range got {
		if !cmp.Equal(c.Tags, want[i]) {
			t.Errorf("child %d tags = %v, want %v", i, c.Tags, want[i])
		}
	}
	if listed := ids(f.listRuns(store.RunQuery{Tags: map[string]string{"channel": "batch"}})); !cmp.Equal(listed, []uuid.UUID{got[1].ID}) {
		t.Errorf("runs tagged channel=batch = %v, want the second child %s", listed, got[1].ID)
	}
	previews, err := f.s.ChildRunPreviews(f.ctx, []uuid.UUID{parent}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(previews) != 1 || len(previews[0].First) != 2 || !cmp.Equal(previews[0].First[0].Tags, want[0]) {
		t.Errorf("ChildRunPreviews = %+v, want both children with their tags", previews)

	}
}
