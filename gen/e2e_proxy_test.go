//go:build unix

package gen

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// unpublished is the module the user's module gets through a replace
// directive: Trellis is not published, so the proxy does not know it.
const unpublished = "github.com/effectivelabs/trellis"

// startModuleProxy serves the module proxy protocol to the test's go
// commands, as proxy.golang.org would for a new user, and returns its
// URL, for GOPROXY. It answers from modCache's downloads (the caller's
// module cache) when they hold the file, and otherwise from the proxies
// of goproxy (the caller's GOPROXY), in order, as a GOPROXY list would
// (the next one after "not found"), checksum database included. For
// Trellis's own module paths it answers "not found", as the public proxy
// does for a module it has never seen: so go get -tool of the command
// resolves it through the replace, as for a user. (A proxy that
// answers something else, such as 403 for a repository it may not serve,
// would stop go get: it takes only "not found" as a reason to try the
// module path's shorter prefixes.)
func startModuleProxy(t *testing.T, modCache, goproxy string) string {
	var upstreams []string
	for _, p := range strings.FieldsFunc(goproxy, func(r rune) bool { return r == ',' || r == '|' }) {
		if strings.HasPrefix(p, "https://") || strings.HasPrefix(p, "http://") {
			upstreams = append(upstreams, strings.TrimSuffix(p, "/"))
		}
	}
	downloads := ""
	if modCache != "" {
		downloads = filepath.Join(modCache, "cache", "download")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := path.Clean(r.URL.Path)
		if p == "/"+unpublished || strings.HasPrefix(p, "/"+unpublished+"/") {
			http.NotFound(w, r)
			return
		}
		if downloads != "" {
			name := filepath.Join(downloads, filepath.FromSlash(p))
			if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
				http.ServeFile(w, r, name)
				return
			}
		}
		for _, up := range upstreams {
			resp, err := http.Get(up + p)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
				resp.Body.Close()
				continue
			}
			w.WriteHeader(resp.StatusCode)
			_, err = io.Copy(w, resp.Body)
			resp.Body.Close()
			if err != nil && !errors.Is(err, io.EOF) {
				t.Logf("module proxy: %s: %v", p, err)
			}
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
