package cli

import (
	"flag"
	"net/url"
	"regexp"
	"strings"
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
	return redactPassword(*d.p)
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

var (
	// keywordPassword is password=... in a key/value connection string:
	// the value single-quoted (with backslash escapes) or up to a space.
	keywordPassword = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)
	// queryPassword is password=... among a URL's query parameters.
	queryPassword = regexp.MustCompile(`(^|&)password=[^&]*`)
)

// redactPassword returns a connection string, URL (postgres://) or
// key/value (host=... password=...), with its password replaced by
// xxxxx, wherever it is given.
func redactPassword(s string) string {
	if !strings.Contains(s, "://") {
		return keywordPassword.ReplaceAllString(s, "${1}xxxxx")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(a connection string that does not parse)"
	}
	u.RawQuery = queryPassword.ReplaceAllString(u.RawQuery, "${1}password=xxxxx")
	return u.Redacted()
}
