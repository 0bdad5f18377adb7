package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/trellistest"
)

// countingStore counts the reads live updates make: event counts (one a
// poll), and the tasks of a run (one each time a run's page is rendered).
type countingStore struct {
	store.Store
	eventCounts, listTasks atomic.Int64
}

func (s *countingStore) EventCounts(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]int, error) {
	s.eventCounts.Add(1)
	return s.Store.EventCounts(ctx, ids)
}

func (s *countingStore) ListTasks(ctx context.Context, id uuid.UUID) ([]store.Task, error) {
	s.listTasks.Add(1)
	return s.Store.ListTasks(ctx, id)
}

// Five browsers watch a failed run; it is retried and completes. Each sees
// it happen, and the database is read once per poll, not per browser.
func TestLiveRunPage(t *testing.T) {
	counting := &countingStore{Store: memstore.New()}
	b := setup(t, dashboard.Options{}, trellistest.WithStore(counting))
	id := b.failed(`{"note":"watch me"}`)
	var streams []*stream
	for range 5 {
		s := b.live("/live/runs/" + id.String())
		s.next(t, "card declined") // the page as it is, at once
		streams = append(streams, s)
	}
	// Nothing changes: polls read event counts, never the run.
	reads := counting.listTasks.Load()
	for polls := counting.eventCounts.Load(); counting.eventCounts.Load() < polls+5; {
		time.Sleep(time.Millisecond)
	}
	if got := counting.listTasks.Load(); got != reads {
		t.Errorf("the run was read %d times while nothing changed", got-reads)
	}

	polls := counting.eventCounts.Load()
	if res := ops.New(b.h.Engine).Retry(t.Context(), id); res[0].Outcome != ops.Retried {
		t.Fatalf("Retry = %+v", res)
	}
	b.h.RunUntilIdle()
	b.h.Advance(time.Second) // the cool-off ends; ship runs
	for _, s := range streams {
		page := s.next(t, `<span id="run-status"><span class="badge s-completed">COMPLETED</span>`)
		if !strings.Contains(page, `class="node k-step s-completed" data-step="ship"`) {
			t.Error("the completed run's live page does not show ship completed")
		}
	}
	// Each poll that saw the run change read it once, whatever the
	// number of browsers.
	if reads, polls := counting.listTasks.Load()-reads, counting.eventCounts.Load()-polls; reads > polls {
		t.Errorf("%d reads of the run over %d polls for 5 browsers: want at most one a poll", reads, polls)
	}
}

func TestLiveRunsListAndOverview(t *testing.T) {
	b := setup(t, dashboard.Options{})
	list := b.live("/live/runs?status=FAILED")
	overview := b.live("/live/overview")
	list.next(t, "No runs.")
	id := b.failed(`{"note":"appears"}`)
	list.next(t, id.String())
	overview.next(t, id.String())
	// A listing by where, or past its first page, is not live.
	for _, path := range []string{"/live/runs?workflow=probe&where=input.amount+%3E+1", "/live/runs?after=x"} {
		if code, _ := b.get(path); code != http.StatusBadRequest {
			t.Errorf("GET %s = %d, want 400", path, code)
		}
	}
	if body := b.page("/runs?workflow=probe&where=input.amount+%3E+1", http.StatusOK); strings.Contains(body, "data-live") {
		t.Error("a listing by where says it updates live")
	}
}

// Close ends the streams of open pages, and refuses new ones.
func TestCloseEndsStreams(t *testing.T) {
	b := setup(t, dashboard.Options{})
	id := b.trigger(`{}`)
	s := b.live("/live/runs/" + id.String())
	s.next(t, id.String())
	b.dash.Close()
	for range s.events {
	}
	if code, _ := b.get("/live/runs/" + id.String()); code != http.StatusServiceUnavailable {
		t.Errorf("a stream opened after Close = %d, want 503", code)
	}
}
