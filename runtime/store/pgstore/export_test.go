package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/schema"
)

// For the tests of package pgstore_test.
var (
	KindToDB   = kindToDB
	KindFromDB = kindFromDB
)

// MigrateTo applies the migrations up to version, as a binary that knew
// no later ones, and no schema/functions, would (as every binary up to
// migration 0015 did).
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, version int) ([]schema.Migration, error) {
	all, err := schema.Migrations()
	if err != nil {
		return nil, err
	}
	return migrate(ctx, pool, all[:version], nil)
}
