package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://ada:pw@h/db":                 "postgres://ada:xxxxx@h/db",
		"postgres://ada@h/db":                    "postgres://ada@h/db",
		"postgresql://h/db?password=pw&user=ada": "postgresql://h/db?password=xxxxx&user=ada",
		"host=h password=pw user=ada":            "host=h password=xxxxx user=ada",
		"host=h password = 'p w\\' x' user=ada":  "host=h password = xxxxx user=ada",
		"host=h user=ada":                        "host=h user=ada",
		"postgres://ada:p%zzw@h/db":              "(a connection string that does not parse)",
		"":                                       "",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConnectErrorsHideThePassword connects with connection strings whose
// password is a marker, to a port that refuses, a database that does not
// exist and with settings that do not parse: no error holds the marker,
// in any of the ways a connection string gives a password (pgx's own
// redaction misses some of them).
func TestConnectErrorsHideThePassword(t *testing.T) {
	const marker = "Mk7pw-Q9"
	for _, conn := range []string{
		"postgres://ada:" + marker + "@127.0.0.1:1/db?sslmode=disable&connect_timeout=5",
		"postgres://ada@127.0.0.1:1/db?password=" + marker + "&sslmode=disable",
		"postgres://ada@127.0.0.1:1/db?password=" + marker + "&sslmode=bogus",
		"postgres://ada:" + marker + "@127.0.0.1:1/db?port=bogus",
		"postgres://ada:" + marker + "%zz@127.0.0.1:1/db",
		"postgres://ada:" + marker + "@127.0.0.1:1/db?sslmode=disable",
		"host=127.0.0.1 port=1 user=ada password=" + marker + " sslmode=disable",
		"host=127.0.0.1 port=1 user=ada password = '" + marker + " x' sslmode=disable",
		"host=127.0.0.1 port=1 user=ada password = '" + marker + " x' sslmode=bogus",
		"host=127.0.0.1 port=bogus password=" + marker,
	} {
		_, err := Connect(context.Background(), conn)
		if err == nil {
			t.Fatalf("Connect(%s) succeeded", Redact(conn))
		}
		if strings.Contains(err.Error(), marker) {
			t.Errorf("Connect(%s): the error shows the password: %v", Redact(conn), err)
		}
	}
}

func TestRedactErrKeepsTheChain(t *testing.T) {
	cause := &pgconn.ParseConfigError{ConnString: "host=h password = 'se cret'"}
	err := RedactErr(cause, "host=h password = 'se cret'")
	if strings.Contains(err.Error(), "se cret") {
		t.Errorf("RedactErr = %q, still holds the password", err)
	}
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		t.Errorf("errors.As(RedactErr(...), *pgconn.ParseConfigError) = false")
	}
	if got := RedactErr(errors.New("no password here"), "host=h password=pw"); got.Error() != "no password here" {
		t.Errorf("RedactErr changed an error without the password: %q", got)
	}
}
