package pgstore

import (
	"net/url"
	"regexp"
	"strings"
)

var (
	// keywordPassword is password=... in a key/value connection string:
	// the value single-quoted (with backslash escapes) or up to a space.
	keywordPassword = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)
	// queryPassword is password=... among a URL's query parameters.
	queryPassword = regexp.MustCompile(`(^|&)password=([^&]*)`)
	// urlPassword is the password of a URL's user info, for a URL that
	// does not parse: what lies between the user's colon and the last @
	// before the host.
	urlPassword = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://[^:@/]*:([^/]*)@`)
)

// Redact returns a connection string, URL (postgres://) or key/value
// (host=... password=...), with its password replaced by xxxxx wherever
// it is given, for printing: in help, logs and errors.
func Redact(conn string) string {
	if !strings.Contains(conn, "://") {
		return keywordPassword.ReplaceAllString(conn, "${1}xxxxx")
	}
	u, err := url.Parse(conn)
	if err != nil {
		return "(a connection string that does not parse)"
	}
	u.RawQuery = queryPassword.ReplaceAllString(u.RawQuery, "${1}password=xxxxx")
	return u.Redacted()
}

// RedactErr returns err with every password of the connection string conn
// replaced by xxxxx in its text; errors.Is and errors.As still see err.
// pgx hides a password in its errors, but not one given as a URL's
// password parameter or as password = '...' with spaces; everything that
// prints an error about a connection passes it through RedactErr.
func RedactErr(err error, conn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	redacted := msg
	for _, pw := range passwords(conn) {
		redacted = strings.ReplaceAll(redacted, pw, "xxxxx")
	}
	if redacted == msg {
		return err
	}
	return &redactedError{msg: redacted, err: err}
}

// redactedError is an error whose text had a password taken out.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// passwords returns the passwords in conn as they may appear in an
// error's text: raw, unquoted and decoded.
func passwords(conn string) []string {
	var raw []string
	for _, m := range keywordPassword.FindAllStringSubmatch(conn, -1) {
		raw = append(raw, m[2])
		if v := m[2]; len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			raw = append(raw, v[1:len(v)-1], strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(v[1:len(v)-1]))
		}
	}
	if m := urlPassword.FindStringSubmatch(conn); m != nil {
		raw = append(raw, m[1])
	}
	if i := strings.Index(conn, "?"); i >= 0 {
		for _, m := range queryPassword.FindAllStringSubmatch(conn[i+1:], -1) {
			raw = append(raw, m[2])
		}
	}
	var out []string
	for _, pw := range raw {
		if pw == "" || pw == "xxxxx" {
			continue
		}
		out = append(out, pw)
		if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
			out = append(out, dec)
		}
		if dec, err := url.QueryUnescape(pw); err == nil && dec != pw {
			out = append(out, dec)
		}
	}
	// Longest first, so that a password containing another is replaced
	// whole.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
