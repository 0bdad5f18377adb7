package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

// createWithID creates a diamond run with the id given, as a person would
// look it up by: the engine's ids are random where these are chosen.
func (f *fixture) createWithID(id string, o runOpts) uuid.UUID {
	f.t.Helper()
	res, err := f.s.CreateRuns(f.ctx, store.CreateRuns{Now: f.now, Runs: []store.NewRun{{
		ID: uuid.MustParse(id), Workflow: "diamond", Version: "diamond@v1", Tenant: o.tenant,
		IdempotencyKey: o.key, Input: []byte(`{"n":1}`), Tasks: diamondTasks(1),
	}}})
	if err != nil {
		f.t.Fatalf("CreateRuns: %v", err)
	}
	return res[0].ID
}

// testListRunsByIDPrefix looks runs up by the start of their ids: the
// runs whose ids begin so, newest first, and no other, at the ends of the
// range of ids too, with the other filters.
func testListRunsByIDPrefix(t *testing.T, f *fixture) {
	low := f.createWithID("0000abcd-0000-7000-8000-000000000001", runOpts{tenant: "acme"})
	f.tick(time.Second)
	first := f.createWithID("abcd0000-0000-7000-8000-000000000001", runOpts{tenant: "acme"})
	f.tick(time.Second)
	second := f.createWithID("abcd0000-0000-7000-8000-000000000002", runOpts{tenant: "beta"})
	f.tick(time.Second)
	near := f.createWithID("abce0000-0000-7000-8000-000000000001", runOpts{tenant: "acme"})
	f.tick(time.Second)
	high := f.createWithID("ffffffff-ffff-7fff-bfff-ffffffffffff", runOpts{tenant: "acme"})

	tests := []struct {
		prefix string
		q      store.RunQuery
		want   []uuid.UUID
	}{
		{"abcd0000", store.RunQuery{}, []uuid.UUID{second, first}},
		{"ABCD0000", store.RunQuery{}, []uuid.UUID{second, first}},
		{"abcd0000-0000-7000-8000-00000000000", store.RunQuery{}, []uuid.UUID{second, first}},
		{"abcd0000000070008000000000000001", store.RunQuery{}, []uuid.UUID{first}},
		{"abcd0000-0000-7000-8000-000000000002", store.RunQuery{}, []uuid.UUID{second}},
		{"abce0000", store.RunQuery{}, []uuid.UUID{near}},
		{"abcd000", store.RunQuery{}, nil}, // too short: refused below
		{"abcf0000", store.RunQuery{}, []uuid.UUID{}},
		{"0000abcd", store.RunQuery{}, []uuid.UUID{low}},
		{"ffffffff", store.RunQuery{}, []uuid.UUID{high}},
		{"ffffffff-ffff-7fff-bfff-ffffffffffff", store.RunQuery{}, []uuid.UUID{high}},
		{"abcd0000", store.RunQuery{Tenant: "acme"}, []uuid.UUID{first}},
		{"abcd0000", store.RunQuery{Limit: 1}, []uuid.UUID{second}},
		{"abcd0000", store.RunQuery{After: &store.RunCursor{CreatedAt: f.now.Add(-2 * time.Second), ID: second}}, []uuid.UUID{first}},
	}
	for _, tt := range tests {
		p, err := store.ParseRunIDPrefix(tt.prefix)
		if tt.want == nil {
			if err == nil {
				t.Errorf("ParseRunIDPrefix(%q) took it", tt.prefix)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseRunIDPrefix(%q): %v", tt.prefix, err)
		}
		tt.q.IDPrefix = p
		if diff := cmp.Diff(tt.want, ids(f.listRuns(tt.q))); diff != "" {
			t.Errorf("ListRuns(%+v) (-want +got):\n%s", tt.q, diff)
		}
	}
}

// testListRunsByKey looks runs up by their idempotency keys: within a
// tenant or across tenants, matching the key exactly, whatever it holds
// (characters that patterns give a meaning to, a key longer than any
// stored).
func testListRunsByKey(t *testing.T, f *fixture) {
	acme := f.createDiamond(runOpts{tenant: "acme", key: "order-1"})
	f.tick(time.Second)
	beta := f.createDiamond(runOpts{tenant: "beta", key: "order-1"})
	f.tick(time.Second)
	percent := f.createDiamond(runOpts{tenant: "acme", key: "%"})
	f.tick(time.Second)
	under := f.createDiamond(runOpts{tenant: "acme", key: "order_1"})
	f.createDiamond(runOpts{tenant: "acme", key: `order\1`})

	tests := []struct {
		q    store.RunQuery
		want []uuid.UUID
	}{
		{store.RunQuery{IdempotencyKey: "order-1"}, []uuid.UUID{beta, acme}},
		{store.RunQuery{IdempotencyKey: "order-1", Tenant: "acme"}, []uuid.UUID{acme}},
		{store.RunQuery{IdempotencyKey: "order-1", Tenant: "gamma"}, []uuid.UUID{}},
		{store.RunQuery{IdempotencyKey: "%"}, []uuid.UUID{percent}},
		{store.RunQuery{IdempotencyKey: "order_1"}, []uuid.UUID{under}},
		{store.RunQuery{IdempotencyKey: "order%"}, []uuid.UUID{}},
		{store.RunQuery{IdempotencyKey: "ORDER-1"}, []uuid.UUID{}},
		{store.RunQuery{IdempotencyKey: strings.Repeat("k", 10_000)}, []uuid.UUID{}},
		{store.RunQuery{IdempotencyKey: "order-1\x00"}, []uuid.UUID{}},
		{store.RunQuery{IdempotencyKey: "order-\xff"}, []uuid.UUID{}},
		{store.RunQuery{IdempotencyKey: "order-1", Tenant: "acme\x00"}, []uuid.UUID{}},
	}
	for _, tt := range tests {
		runs, err := f.s.ListRuns(f.ctx, tt.q)
		if err != nil {
			t.Errorf("ListRuns(key %.20q, tenant %q): %v", tt.q.IdempotencyKey, tt.q.Tenant, err)
			continue
		}
		if diff := cmp.Diff(tt.want, ids(runs)); diff != "" {
			t.Errorf("ListRuns(key %.20q, tenant %q) (-want +got):\n%s", tt.q.IdempotencyKey, tt.q.Tenant, diff)
		}
	}
}
