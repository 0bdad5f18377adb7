package memstore

import (
	"context"
	"time"

	"github.com/effectivelabs/trellis/runtime/store"
)

// Leadership implements store.Coordination: engines sharing one memory
// store elect one leader among themselves.
func (s *Store) Leadership(worker string) store.Elector { return &elector{s: s, worker: worker} }

type elector struct {
	s      *Store
	worker string
}

func (e *elector) TryLead(context.Context) (bool, error) {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	if e.s.leader == "" {
		e.s.leader = e.worker
	}
	return e.s.leader == e.worker, nil
}

func (e *elector) Resign(context.Context) error {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	if e.s.leader == e.worker {
		e.s.leader = ""
	}
	return nil
}

// Listen implements store.Coordination. The channel is closed when ctx
// ends.
func (s *Store) Listen(ctx context.Context) (<-chan store.Notification, error) {
	ch := make(chan store.Notification, 256)
	s.mu.Lock()
	s.subSeq++
	id := s.subSeq
	s.subs[id] = ch
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
		close(ch)
	}()
	return ch, nil
}

// Maintain implements store.Coordination: it forgets the rate keys at
// rest.
func (s *Store) Maintain(_ context.Context, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetRates(now)
	return nil
}
