package dashboard

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// perPage is how many rows a page of workers, queue groups or schedules
// shows, however many there are.
const perPage = 100

// pager is where a page of rows stands in the whole list.
type pager struct {
	Page, Pages, Total int
	// From and To number the rows shown, from 1.
	From, To int
	// Prev and Next link to the neighbouring pages, empty at the ends.
	Prev, Next string
}

// pageNumber reads the "page" parameter: 1 when absent.
func pageNumber(q url.Values) (int, error) {
	s := strings.TrimSpace(q.Get("page"))
	if s == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1_000_000 {
		return 0, fmt.Errorf("%q: give a page number from 1", truncate(s, 40))
	}
	return n, nil
}

// paginate returns the rows of page n (the last page when n is past it)
// and where they stand; link makes the address of a page.
func paginate[T any](rows []T, n int, link func(page int) string) ([]T, pager) {
	p := pager{Total: len(rows), Pages: max(1, (len(rows)+perPage-1)/perPage)}
	p.Page = min(n, p.Pages)
	from := (p.Page - 1) * perPage
	to := min(from+perPage, len(rows))
	p.From, p.To = from+1, to
	if p.Page > 1 {
		p.Prev = link(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = link(p.Page + 1)
	}
	return rows[from:to], p
}

// pageLink is path with query q and the page number (page 1 without).
func pageLink(path string, q url.Values, page int) string {
	v := url.Values{}
	for k, vs := range q {
		v[k] = vs
	}
	v.Del("page")
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	return queryLink(path, v.Encode())
}
