package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// searchShown is how many runs of each kind of match the search page
// lists; the runs list (by key) or a longer prefix finds the others.
const searchShown = 20

// searchData is what the search page shows: the runs whose ids begin
// with what was typed, those triggered with it as their idempotency key,
// and, when it reads as key=value, those with that tag, each newest first.
type searchData struct {
	// Query is what was typed, trimmed; Shown is it cut for showing.
	Query, Shown string
	// IsPrefix says whether the query could be (the start of) a run id,
	// IsTag whether it reads as a tag, key=value.
	IsPrefix, IsTag bool
	ByID            []ops.Run
	ByKey           []ops.Run
	ByTag           []ops.Run
	// MoreByID, MoreByKey and MoreByTag say more runs match than are
	// listed.
	MoreByID, MoreByKey, MoreByTag bool
	// KeyLink lists every run with the key, TagLink every run with the
	// tag, a page at a time.
	KeyLink, TagLink string
	Problem          string
}

// Count is how many runs the page lists.
func (s *searchData) Count() int { return len(s.ByID) + len(s.ByKey) + len(s.ByTag) }

// search finds runs by what the header's search box sends: a run id, the
// start of one, or an idempotency key. One run found opens it; several
// are listed; none is said. A user who sees only some tenants finds only
// their runs: the lookups run within each of their tenants.
func (d *Dashboard) search(w http.ResponseWriter, r *http.Request) {
	u := userOf(r)
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	data := &searchData{Query: q, Shown: truncate(q, 80)}
	status := http.StatusOK
	if q != "" {
		status = d.find(r.Context(), u, data)
	}
	if status == http.StatusOK && data.Count() == 1 && !data.MoreByID && !data.MoreByKey && !data.MoreByTag {
		found := slices.Concat(data.ByID, data.ByKey, data.ByTag)
		http.Redirect(w, r, d.url("/runs/"+found[0].ID.String()), http.StatusSeeOther)
		return
	}
	d.render(w, r, status, "search", d.newPage(w, r, "", "Find a run", data))
}

// find fills data with the runs its query finds that u may see, and
// returns the status to answer with.
func (d *Dashboard) find(ctx context.Context, u User, data *searchData) int {
	q := data.Query
	if ops.CheckRunRef(q) == nil {
		data.IsPrefix = true
		prefix := q
		if id, err := uuid.Parse(q); err == nil {
			prefix = id.String() // braces, urn:uuid: and such
		}
		runs, err := d.visibleRuns(ctx, u, ops.RunFilter{IDPrefix: prefix, Limit: searchShown + 1})
		if err != nil {
			data.Problem = d.problem("finding runs by id", err)
			return http.StatusInternalServerError
		}
		data.ByID, data.MoreByID = runs[:min(len(runs), searchShown)], len(runs) > searchShown
	}
	runs, err := d.visibleRuns(ctx, u, ops.RunFilter{IdempotencyKey: q, Limit: searchShown + 1})
	if err != nil {
		data.Problem = d.problem("finding runs by idempotency key", err)
		return http.StatusInternalServerError
	}
	for _, r := range runs[:min(len(runs), searchShown)] {
		if !slices.ContainsFunc(data.ByID, func(o ops.Run) bool { return o.ID == r.ID }) {
			data.ByKey = append(data.ByKey, r)
		}
	}
	data.MoreByKey = len(runs) > searchShown
	if len(runs) > 0 {
		data.KeyLink = queryLink(d.url("/runs"), url.Values{"key": {q}}.Encode())
	}
	// key=value that names a tag a run may have: the runs tagged so.
	k, v, ok := strings.Cut(q, "=")
	if !ok || runtime.CheckTags(map[string]string{k: v}) != nil {
		return http.StatusOK
	}
	data.IsTag = true
	if runs, err = d.visibleRuns(ctx, u, ops.RunFilter{Tags: map[string]string{k: v}, Limit: searchShown + 1}); err != nil {
		data.Problem = d.problem("finding runs by tag", err)
		return http.StatusInternalServerError
	}
	for _, r := range runs[:min(len(runs), searchShown)] {
		if !slices.ContainsFunc(slices.Concat(data.ByID, data.ByKey), func(o ops.Run) bool { return o.ID == r.ID }) {
			data.ByTag = append(data.ByTag, r)
		}
	}
	data.MoreByTag = len(runs) > searchShown
	if len(runs) > 0 {
		data.TagLink = queryLink(d.url("/runs"), url.Values{"tag": {q}}.Encode())
	}
	return http.StatusOK
}
