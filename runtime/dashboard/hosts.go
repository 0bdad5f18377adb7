package dashboard

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// hosts is the list of host names the dashboard answers to. A page from
// another site that resolves its own name to the dashboard's address
// (DNS rebinding) sends its own name in Host; answering only to known
// names keeps that page from reading the dashboard or acting on it.
type hosts struct {
	// loopback allows localhost and the loopback addresses, on any port:
	// the default, when no list is given.
	loopback bool
	any      bool
	exact    map[string]bool // name, or name:port
	suffixes []string        // ".example.com", from "*.example.com"
}

// newHosts reads a list of allowed hosts: names ("ops.example.com") on
// any port, names with a port ("ops.example.com:8443"), "*.example.com"
// for every name under example.com, "localhost" for the loopback names
// and addresses, or "*" for every host. An empty list allows the
// loopback names only.
func newHosts(list []string) (hosts, error) {
	h := hosts{exact: map[string]bool{}}
	if len(list) == 0 {
		h.loopback = true
		return h, nil
	}
	for _, entry := range list {
		e := normalHost(entry)
		switch {
		case e == "":
			return h, fmt.Errorf("allowed host %q: give a host name such as ops.example.com", entry)
		case e == "*":
			h.any = true
		case e == "localhost":
			h.loopback = true
		case strings.HasPrefix(e, "*."):
			rest := e[1:]
			if strings.ContainsAny(rest[1:], "*:/") || len(rest) < 2 {
				return h, fmt.Errorf("allowed host %q: a wildcard is *. followed by a domain such as *.example.com", entry)
			}
			h.suffixes = append(h.suffixes, rest)
		case strings.ContainsAny(e, "*/?#@ "):
			return h, fmt.Errorf("allowed host %q: give a host name, optionally with a port (ops.example.com:8443), without scheme or path", entry)
		default:
			if name, port, err := net.SplitHostPort(e); err == nil {
				if name == "" || port == "" {
					return h, fmt.Errorf("allowed host %q: give a host name before the port", entry)
				}
				e = net.JoinHostPort(strings.Trim(name, "[]"), port)
			} else {
				e = strings.Trim(e, "[]")
			}
			h.exact[e] = true
		}
	}
	return h, nil
}

// CheckAllowedHosts reports the first entry of an Options.AllowedHosts
// list New would refuse, and why.
func CheckAllowedHosts(list []string) error {
	_, err := newHosts(list)
	return err
}

// normalHost lowers a host name and drops a trailing dot.
func normalHost(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if name, port, err := net.SplitHostPort(s); err == nil {
		return net.JoinHostPort(strings.TrimSuffix(name, "."), port)
	}
	return strings.TrimSuffix(s, ".")
}

// allows reports whether a request's Host (name, or name:port) is on the
// list.
func (h hosts) allows(host string) bool {
	if h.any {
		return true
	}
	host = normalHost(host)
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = host, ""
	}
	name = strings.Trim(name, "[]")
	if name == "" {
		return false
	}
	if h.loopback {
		if name == "localhost" {
			return true
		}
		if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
			return true
		}
	}
	if h.exact[name] || port != "" && h.exact[net.JoinHostPort(name, port)] {
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			return true
		}
	}
	return false
}

// allowsOrigin reports whether an Origin header names an allowed host
// over http or https. "*" does not count: it lets a proxy in front
// decide which names reach the dashboard, but a page may act only from
// a name the list gives (or a trusted origin).
func (h hosts) allowsOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
		return false
	}
	named := h
	named.any = false
	return named.allows(u.Host)
}

// misdirected answers a request for a host the dashboard does not serve:
// a short plain-text reason, and nothing of the dashboard.
func misdirected(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusMisdirectedRequest)
	_, _ = fmt.Fprintln(w, "421 Misdirected Request: this dashboard does not answer to that host name; "+
		"its operator can allow it (trellis dashboard -allowed-hosts, or Options.AllowedHosts).")
}
