package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

type pauseKey struct{ workflow, tenant string }

// paused reports whether a task of workflow and tenant is held by a
// pause. Callers hold s.mu.
func (s *Store) paused(workflow, tenant string) bool {
	if len(s.pauses) == 0 {
		return false
	}
	_, all := s.pauses[pauseKey{workflow, ""}]
	_, one := s.pauses[pauseKey{workflow, tenant}]
	return all || one
}

// PauseWorkflows implements store.Pauses.
func (s *Store) PauseWorkflows(_ context.Context, workflow string, tenants []string, now time.Time) ([]store.WorkflowPause, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(tenants) == 0 {
		tenants = []string{""}
	}
	var out []store.WorkflowPause
	for _, tenant := range tenants {
		key := pauseKey{workflow, tenant}
		if _, ok := s.pauses[key]; ok {
			continue
		}
		s.pauses[key] = now
		out = append(out, store.WorkflowPause{Workflow: workflow, Tenant: tenant, PausedAt: now})
	}
	return out, nil
}

// ResumeWorkflows implements store.Pauses.
func (s *Store) ResumeWorkflows(_ context.Context, workflow string, tenants []string) ([]store.WorkflowPause, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.WorkflowPause
	for key, at := range s.pauses {
		if key.workflow == workflow && (len(tenants) == 0 || slices.Contains(tenants, key.tenant)) {
			delete(s.pauses, key)
			out = append(out, store.WorkflowPause{Workflow: workflow, Tenant: key.tenant, PausedAt: at})
		}
	}
	slices.SortFunc(out, comparePauses)
	if len(out) > 0 {
		s.notify(store.Notification{Kind: store.TasksReady})
	}
	return out, nil
}

// ListPauses implements store.Pauses, counting the held tasks from the
// valid queue entries each tenant keeps.
func (s *Store) ListPauses(_ context.Context) ([]store.WorkflowPause, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.WorkflowPause, 0, len(s.pauses))
	for key, at := range s.pauses {
		p := store.WorkflowPause{Workflow: key.workflow, Tenant: key.tenant, PausedAt: at}
		_, all := s.pauses[pauseKey{key.workflow, ""}]
		for name, ts := range s.queue.tenants {
			if key.tenant != "" && (key.tenant != name || all) {
				continue
			}
			for v, lanes := range ts.valid {
				if v.workflow == key.workflow {
					for _, n := range lanes {
						p.Queued += n
					}
				}
			}
		}
		out = append(out, p)
	}
	slices.SortFunc(out, comparePauses)
	return out, nil
}

func comparePauses(a, b store.WorkflowPause) int {
	return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Tenant, b.Tenant))
}
