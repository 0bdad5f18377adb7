package runtime

import (
	"errors"
	"sync"
)

// runMode is how an engine runs: started (Start, until Stop) or driven by
// hand (a Driver), never both, each at most once.
type runMode struct {
	mu        sync.Mutex
	started   bool       // Start reserved or completed
	stopping  bool       // Stop began
	lifecycle *lifecycle // set once started
	driver    *Driver    // set while driven by hand
}

// reserveStart marks the engine started before its loops start, so that
// a second Start or NewDriver is refused meanwhile.
func (m *runMode) reserveStart() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.started || m.stopping:
		return errors.New("engine: Start called twice")
	case m.driver != nil:
		return errors.New("engine: a Driver runs this engine by hand; it cannot be started")
	}
	m.started = true
	return nil
}

// startFailed undoes reserveStart; startDone records what the started
// engine runs, for Stop.
func (m *runMode) startFailed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started = false
}

func (m *runMode) startDone(lc *lifecycle) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lifecycle = lc
}

// beginStop returns what a started engine runs, to stop it, the first
// time it is called after the start completed; nil otherwise.
func (m *runMode) beginStop() *lifecycle {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lifecycle == nil || m.stopping {
		return nil
	}
	m.stopping = true
	return m.lifecycle
}

// setDriver makes the driver that newDriver returns the engine's, unless
// the engine is started or has one; newDriver runs under the lock, so
// that it runs only when its driver is kept.
func (m *runMode) setDriver(newDriver func() (*Driver, error)) (*Driver, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.started:
		return nil, errors.New("runtime.NewDriver: the engine is started")
	case m.driver != nil:
		return nil, errors.New("runtime.NewDriver: the engine already has a driver")
	}
	d, err := newDriver()
	if err != nil {
		return nil, err
	}
	m.driver = d
	return d, nil
}

// currentDriver returns the engine's driver, or nil.
func (m *runMode) currentDriver() *Driver {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.driver
}
