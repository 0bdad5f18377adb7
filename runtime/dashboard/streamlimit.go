package dashboard

import "sync"

// streamLimit counts the live streams open, in all and per named user:
// each holds a connection (and a goroutine) for as long as its page
// stays open, so their number is capped.
type streamLimit struct {
	max, perUser int

	mu     sync.Mutex
	open   int
	byUser map[string]int
}

func newStreamLimit(max, perUser int) *streamLimit {
	return &streamLimit{max: max, perUser: perUser, byUser: map[string]int{}}
}

// acquire takes a stream for user ("" for an unnamed one, who counts
// only towards the total), or reports false when a cap is reached.
func (l *streamLimit) acquire(user string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max || user != "" && l.byUser[user] >= l.perUser {
		return false
	}
	l.open++
	if user != "" {
		l.byUser[user]++
	}
	return true
}

// release gives back a stream acquire took.
func (l *streamLimit) release(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if user != "" {
		if l.byUser[user]--; l.byUser[user] <= 0 {
			delete(l.byUser, user)
		}
	}
}
