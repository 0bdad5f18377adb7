package runtime

import (
	"slices"
	"sync"
)

// waiters are the callers of Wait and WaitMany, by the runs they wait
// for (see wait.go for how they wait).
type waiters struct {
	mu    sync.Mutex
	byRun map[RunID][]*watch
}

// watch is one caller of Wait or WaitMany. Its signal holds a wake-up
// whenever the engine has learnt, since the caller last looked, that one
// of its runs may have ended; ended lists those runs.
type watch struct {
	signal chan struct{} // capacity 1
	ended  []RunID       // guarded by waiters.mu
}

func newWaiters() *waiters {
	return &waiters{byRun: map[RunID][]*watch{}}
}

// watch starts a watch on runs (distinct ids).
func (ws *waiters) watch(ids []RunID) *watch {
	w := &watch{signal: make(chan struct{}, 1)}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, id := range ids {
		ws.byRun[id] = append(ws.byRun[id], w)
	}
	return w
}

// unwatch ends a watch; a run's entry goes with its last watch, so that
// waiting on runs that never finish leaks nothing.
func (ws *waiters) unwatch(ids []RunID, w *watch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, id := range ids {
		rest := slices.DeleteFunc(ws.byRun[id], func(x *watch) bool { return x == w })
		if len(rest) == 0 {
			delete(ws.byRun, id)
		} else {
			ws.byRun[id] = rest
		}
	}
}

// signalled returns the runs signalled to w since the last call.
func (ws *waiters) signalled(w *watch) []RunID {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ended := w.ended
	w.ended = nil
	return ended
}

// runFinished signals the watches of a run: it may have ended.
func (ws *waiters) runFinished(id RunID) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, w := range ws.byRun[id] {
		w.ended = append(w.ended, id)
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
}
