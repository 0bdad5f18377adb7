package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/runtime/ops"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages holds a template set per page: the layout, the shared partials
// and the page's own file, which defines "title" and "content", and
// "live", the part of the page live updates replace.
type pages struct {
	byName map[string]*template.Template
}

// pageNames are the pages, each templates/<name>.html.
func pageNames() []string {
	return []string{"overview", "workflows", "workflow", "runs", "run", "workers", "queue", "schedules", "confirm", "error", "search"}
}

func mustParsePages() *pages {
	p := &pages{byName: map[string]*template.Template{}}
	base := template.Must(template.New("").Funcs(funcs()).ParseFS(templateFS, "templates/layout.html", "templates/partials.html"))
	for _, name := range pageNames() {
		t := template.Must(template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html"))
		p.byName[name] = t
	}
	return p
}

// page is what every template sees: the page's own data in Data.
type page struct {
	// Base is the dashboard's prefix, for links.
	Base     string
	Title    string
	Nav      string // the navigation entry to highlight
	ReadOnly bool
	// User is who is signed in; Name is empty without authentication.
	User User
	// CSRF is the token of this browser's forms; empty in live updates,
	// which many browsers share (the page script fills it in).
	CSRF string
	Now  time.Time
	// Live is the URL of the page's live updates, empty for none.
	Live string
	// Notice says what an action just did.
	Notice string
	Data   any
}

// newPage returns the page of r, with its CSRF token (and cookie) unless
// its user is read-only.
func (d *Dashboard) newPage(w http.ResponseWriter, r *http.Request, nav, title string, data any) *page {
	u := userOf(r)
	p := &page{Base: d.opts.Prefix, Title: title, Nav: nav, ReadOnly: u.ReadOnly, User: u, Now: d.clock.Now().UTC(), Data: data}
	if !u.ReadOnly {
		p.CSRF = d.csrf.token(w, r)
	}
	return p
}

// livePage is a page rendered for the live updates of every browser
// whose user sees what u sees (viewKey).
func (d *Dashboard) livePage(u User, data any) *page {
	return &page{Base: d.opts.Prefix, ReadOnly: u.ReadOnly, User: User{ReadOnly: u.ReadOnly, Tenants: u.Tenants}, Now: d.clock.Now().UTC(), Data: data}
}

// viewKey names what r's user may see and do: live pages are shared by
// the browsers of users with the same key, and only by them.
func viewKey(r *http.Request) string {
	u := userOf(r)
	return fmt.Sprintf("%t %q ", u.ReadOnly, u.Tenants)
}

// render writes page name with status code, whole.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	var b bytes.Buffer
	if err := d.pages.byName[name].ExecuteTemplate(&b, "layout", p); err != nil {
		d.log.Error("dashboard: rendering a page", "page", name, "path", r.URL.Path, "err", err)
		http.Error(w, "The dashboard failed to render this page; its log says why.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// fragment renders the live part of page name.
func (d *Dashboard) fragment(name string, p *page) ([]byte, error) {
	var b bytes.Buffer
	if err := d.pages.byName[name].ExecuteTemplate(&b, "live", p); err != nil {
		return nil, fmt.Errorf("rendering the live part of %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// errorPage shows a problem: what went wrong and, for a bad request,
// which parameter and why.
func (d *Dashboard) errorPage(w http.ResponseWriter, r *http.Request, status int, message string) {
	u := userOf(r)
	p := &page{Base: d.opts.Prefix, Title: http.StatusText(status), ReadOnly: u.ReadOnly, User: u, Now: d.clock.Now().UTC(),
		Data: errorData{Status: status, Message: message}}
	d.render(w, r, status, "error", p)
}

type errorData struct {
	Status  int
	Message string
}

// badParam answers 400 for a query parameter the page cannot use.
func (d *Dashboard) badParam(w http.ResponseWriter, r *http.Request, param string, err error) {
	d.errorPage(w, r, http.StatusBadRequest, fmt.Sprintf("Parameter %q: %v", param, err))
}

// funcs are the template functions.
func funcs() template.FuncMap {
	return template.FuncMap{
		"ago":       ago,
		"dur":       shortDuration,
		"since":     func(now, t time.Time) string { return shortDuration(now.Sub(t)) },
		"utc":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"iso":       func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"ms":        func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
		"msOn":      msOn,
		"dateOf":    func(t time.Time) string { return t.UTC().Format(time.DateOnly) },
		"lc":        func(v any) string { return strings.ToLower(fmt.Sprint(v)) },
		"dict":      dict,
		"has":       func(list []string, s string) bool { return slices.Contains(list, s) },
		"pct":       func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
		"runPath":   func(id fmt.Stringer) string { return "/runs/" + id.String() },
		"deref":     func(t *time.Time) time.Time { return *t },
		"runTook":   runTook,
		"join":      strings.Join,
		"add":       func(a, b int) int { return a + b },
		"statuses":  ops.RunStatuses,
		"jsonView":  newJSONView,
		"truncate":  truncate,
		"firstLine": firstLine,
		"dagEdge":   edgePath,
		"queryLink": queryLink,
		"workflowOf": func(version string) string { // a version is name@hash
			if i := strings.LastIndex(version, "@"); i > 0 {
				return version[:i]
			}
			return version
		},
	}
}

// dict makes a map of its key and value arguments, for passing several
// values to a template.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict: %d arguments, want key and value pairs", len(kv))
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

// msOn prints t to the millisecond, with its date when it falls on
// another day (in UTC) than day: an event log spans days when a run
// sleeps or waits.
func msOn(day, t time.Time) string {
	day, t = day.UTC(), t.UTC()
	if t.YearDay() == day.YearDay() && t.Year() == day.Year() {
		return t.Format("15:04:05.000")
	}
	return t.Format("2006-01-02 15:04:05.000")
}

// ago says how long before now t was: "3m12s ago".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + shortDuration(-d)
	}
	return shortDuration(d) + " ago"
}

// shortDuration prints a duration to two units at most: 850ms, 4.2s,
// 3m12s, 5h04m, 2d03h.
func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + shortDuration(-d)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// runTook is how long a run took, or "-" while it runs.
func runTook(r ops.Run) string {
	if d, ok := r.Duration(); ok {
		return shortDuration(d)
	}
	return "-"
}

// truncate cuts s to n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// queryLink is path with query, for links built from a page's values.
func queryLink(path, query string) string {
	if query == "" {
		return path
	}
	return path + "?" + query
}

//go:embed assets
var assetFS embed.FS

// asset serves an embedded file of assets/.
func (d *Dashboard) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := fs.ReadFile(assetFS, "assets/"+name)
	if err != nil || strings.Contains(name, "/") {
		d.errorPage(w, r, http.StatusNotFound, "There is no asset "+name+".")
		return
	}
	switch {
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".svg"):
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(b)
}
