package pgstore_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/internal/storetest"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return pgstore.New(pgtest.Pool(t)) })
}

// TestTenantsUnlimited: after the tenant group sequence reaches its
// maximum, new tenants are still queued (the sequence cycles, groups are
// shared) and served fairly.
func TestTenantsUnlimited(t *testing.T) {
	var pool *pgxpool.Pool
	storetest.RunTenantGroups(t, func(t *testing.T) store.Store {
		pool = pgtest.Pool(t)
		return pgstore.New(pool)
	}, func(t *testing.T, _ store.Store) {
		// As after 1,048,575 tenants: the next takes the last group.
		if _, err := pool.Exec(t.Context(), `SELECT setval('trellis_tenant_group', 1048574)`); err != nil {
			t.Fatal(err)
		}
	})
}

// A pool of the user's own, made without pgstore.Configure, reads and
// writes UUIDs through their database/sql methods instead: the store
// behaves the same on it.
func TestConformanceOnAPlainPool(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return pgstore.New(pgtest.PlainPool(t)) })
}

func TestUUIDsWithAndWithoutConfigure(t *testing.T) {
	for name, pool := range map[string]*pgxpool.Pool{"configured": pgtest.Pool(t), "plain": pgtest.PlainPool(t)} {
		t.Run(name, func(t *testing.T) {
			u, v := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewRandom())
			var (
				one, null uuid.UUID
				many      []uuid.UUID
				text      string
			)
			err := pool.QueryRow(t.Context(), `SELECT $1::uuid, $2::uuid[], NULL::uuid, $3::text`, u, []uuid.UUID{u, v}, v).
				Scan(&one, &many, &null, &text)
			if err != nil {
				t.Fatal(err)
			}
			if one != u || !slices.Equal(many, []uuid.UUID{u, v}) || null != uuid.Nil || text != v.String() {
				t.Errorf("round trip: %v, %v, %v, %q; want %v, [%v %v], the nil UUID, %q", one, many, null, text, u, u, v, v.String())
			}
		})
	}
}

// TestConnectRefusesAnEmptyConnectionString: an empty string would
// connect wherever libpq's defaults point; Connect says what is missing.
func TestConnectRefusesAnEmptyConnectionString(t *testing.T) {
	for _, conn := range []string{"", "  "} {
		pool, err := pgstore.Connect(t.Context(), conn)
		if err == nil {
			pool.Close()
			t.Fatalf("Connect(%q) succeeded; want an error", conn)
		}
		if !strings.Contains(err.Error(), "no connection string") {
			t.Errorf("Connect(%q) = %v; want it to say there is no connection string", conn, err)
		}
	}
}
