package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// User is who makes a request, as Options.Authenticate tells: what the
// dashboard lets them see and do.
type User struct {
	// Name is what the dashboard's log records of the user's actions.
	Name string
	// ReadOnly users see everything their tenants allow but act on
	// nothing: the pages show no buttons that act, and the actions'
	// URLs answer 403.
	ReadOnly bool
	// Tenants, when not empty, are the only tenants whose runs the user
	// sees and acts on: another tenant's run answers 404 as if it did not
	// exist. Empty means every tenant.
	Tenants []string
}

// Scoped reports whether the user sees only some tenants.
func (u User) Scoped() bool { return len(u.Tenants) > 0 }

// Sees reports whether the user may see (and, unless read-only, act on)
// runs of tenant.
func (u User) Sees(tenant string) bool { return !u.Scoped() || slices.Contains(u.Tenants, tenant) }

// ErrUnauthenticated is what an Authenticate function returns (or wraps)
// for a request that carries no credentials or wrong ones; the dashboard
// answers it 401. An error with a method Challenge() string adds that
// as the WWW-Authenticate header, so that a browser asks for a password.
var ErrUnauthenticated = errors.New("sign in to see the dashboard")

// ErrForbidden is what an Authenticate function returns (or wraps) for a
// user it knows who may not see the dashboard at all; the dashboard
// answers it 403.
var ErrForbidden = errors.New("you may not see this dashboard")

type userKey struct{}

// userOf returns the user of a request the dashboard let in.
func userOf(r *http.Request) User {
	u, _ := r.Context().Value(userKey{}).(User)
	return u
}

// authenticate finds the request's user, or answers and returns false.
// Without an Authenticate function, everyone is an anonymous user with
// the dashboard's own ReadOnly.
func (d *Dashboard) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	u := User{}
	if d.opts.Authenticate != nil {
		var err error
		u, err = d.opts.Authenticate(r)
		if err != nil {
			d.refuse(w, r, err)
			return r, false
		}
	}
	u.ReadOnly = u.ReadOnly || d.opts.ReadOnly
	return r.WithContext(context.WithValue(r.Context(), userKey{}, u)), true
}

// refuse answers a request Authenticate turned down: 401 (with its
// challenge, if it has one) or 403, in plain text, with no data.
func (d *Dashboard) refuse(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusUnauthorized
	if errors.Is(err, ErrForbidden) {
		status = http.StatusForbidden
	}
	var c interface{ Challenge() string }
	if errors.As(err, &c) && status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", c.Challenge())
	}
	if r.Header.Get("Authorization") != "" || status == http.StatusForbidden { // a browser's first request comes without
		d.log.Warn("dashboard: refused a request", "path", oneLine(r.URL.Path, 200), "remote", r.RemoteAddr, "status", status, "why", err)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "%d %s: %s\n", status, http.StatusText(status), oneLine(err.Error(), 200))
}

// oneLine cuts s to its first line and at most n bytes, for a plain-text
// answer.
func oneLine(s string, n int) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n]
	}
	return s
}
