package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// csrfCookie holds a random value per browser; a form's token is that
// value signed with the dashboard's key. A cross-site page can make a
// browser post to the dashboard, cookie included, but can read neither
// the cookie nor the token; a cookie planted by a sibling domain has no
// valid token, since the key is secret.
const (
	csrfCookie = "trellis_csrf"
	csrfField  = "csrf"
)

// csrf issues and checks action tokens.
type csrf struct {
	key     []byte
	trusted []string // origins besides the request's own
	hosts   hosts    // the hosts the dashboard answers to
	path    string   // the cookie's path: the dashboard's prefix
}

// token returns the token for r's forms, setting the cookie it is bound to
// on w when r came without one.
func (c csrf) token(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 {
		return c.sign(ck.Value)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{
		Name: csrfCookie, Value: v, Path: c.path, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
	return c.sign(v)
}

func (c csrf) sign(v string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// check reports why r may not act, or nil: it must come from a page of
// this dashboard (Sec-Fetch-Site and Origin, when the browser sends
// them, the first line of defence) and carry the token of its cookie.
func (c csrf) check(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return errors.New("the request came from another site (Sec-Fetch-Site: " + site + ")")
	}
	if origin := r.Header.Get("Origin"); origin != "" && !c.sameOrigin(r, origin) {
		return errors.New("the request came from another origin (" + origin + ")")
	}
	ck, err := r.Cookie(csrfCookie)
	if err != nil || len(ck.Value) < 32 {
		return errors.New("the request has no dashboard cookie: reload the page and try again")
	}
	got := r.PostFormValue(csrfField)
	if !hmac.Equal([]byte(got), []byte(c.sign(ck.Value))) {
		return errors.New("the request's token does not match its cookie: reload the page and try again")
	}
	return nil
}

// sameOrigin reports whether origin is a trusted origin, or the request's
// own host (on either scheme: a proxy may end TLS) when the allowed
// hosts name it. The request's Host alone proves nothing: a page that
// rebinds its own name to the dashboard's address sends its own name as
// both Host and Origin, and under AllowedHosts "*" it gets this far.
func (c csrf) sameOrigin(r *http.Request, origin string) bool {
	if slices.Contains(c.trusted, strings.TrimRight(origin, "/")) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, r.Host) && c.hosts.allowsOrigin(origin)
}
