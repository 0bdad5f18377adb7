package cli

import (
	"flag"

	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// databaseURL is the -database-url flag: a Postgres connection string.
// Its default comes from $TRELLIS_DATABASE_URL, which may hold a
// password; help prints a flag's default through String, so String hides
// the password (the value used is the real one).
type databaseURL struct{ p *string }

func (d databaseURL) String() string {
	if d.p == nil {
		return ""
	}
	return pgstore.Redact(*d.p)
}

func (d databaseURL) Set(s string) error {
	*d.p = s
	return nil
}

// addDatabaseURLFlag registers -database-url on fs, into p, with def as
// its default (which help shows with its password hidden).
func addDatabaseURLFlag(fs *flag.FlagSet, p *string, def, usage string) {
	*p = def
	fs.Var(databaseURL{p}, "database-url", usage)
}
