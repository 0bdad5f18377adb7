package runtime

import (
	"fmt"
	"slices"
	"sort"
	"sync"
)

// registry is what an engine knows of workflows: the definitions it has
// compiled or loaded, by version; the workflows whose code it runs, by
// name; the versions it serves (see serving.go), with the code that runs
// each; the definition that child workflow steps start, by name; and the
// versions it knows to be in the store. It only keeps them: compiling,
// loading and saving definitions are the engine's (engine.go, runs.go).
type registry struct {
	mu         sync.Mutex
	defs       map[string]*Definition   // by version
	registered map[string]*registration // by workflow name: the current version
	names      []string                 // registered workflow names, sorted
	serves     map[string]*registration // by version: every version this engine serves, with its code
	former     map[string]bool          // versions registered as former (RegisterFormer)
	checked    map[string]bool          // stored versions compared with a registered one (serving.go)
	known      map[string]*Definition   // by workflow name: the latest registered or compiled with Workflow, the runs child workflow steps start
	saved      map[string]bool          // versions known to be in the store
	events     map[string]versionEvents // by stored version: the events that start it, and those it waits for by key (startevents.go)
	closed     bool                     // Start closed registration
}

// registration is a registered workflow: its definition and its code.
type registration struct {
	def      *Definition
	handlers Handlers
}

func newRegistry() *registry {
	return &registry{
		defs:       map[string]*Definition{},
		registered: map[string]*registration{},
		serves:     map[string]*registration{},
		former:     map[string]bool{},
		checked:    map[string]bool{},
		known:      map[string]*Definition{},
		saved:      map[string]bool{},
		events:     map[string]versionEvents{},
	}
}

// compiled returns the definition of def's version already known, or
// keeps def (and its items workflows' definitions) as that version's.
func (r *registry) compiled(def *Definition) *Definition {
	r.mu.Lock()
	defer r.mu.Unlock()
	if known, ok := r.defs[def.Version()]; ok {
		return known
	}
	r.defs[def.Version()] = def
	for _, items := range def.itemDefinitions() {
		r.defs[items.Version()] = items
	}
	return def
}

// loaded keeps def, read from the store, as its version's definition.
func (r *registry) loaded(def *Definition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.defs[def.Version()] = def
	r.saved[def.Version()] = true
}

// definition returns the definition of a version this engine has
// compiled or loaded.
func (r *registry) definition(version string) (*Definition, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	def, ok := r.defs[version]
	return def, ok
}

// stepName returns the name of a step of a version this engine knows.
func (r *registry) stepName(version string, step int) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if def, ok := r.defs[version]; ok && step >= 0 && step < len(def.graph.Steps) {
		return def.graph.Steps[step].Name, true
	}
	return "", false
}

// register registers def's code h, and that of its map steps in the runs
// of their items workflows. It refuses a workflow registered already, and
// any once registration is closed.
func (r *registry) register(def *Definition, h Handlers) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.registered[def.Name()]; dup {
		return fmt.Errorf("registering workflow %s: already registered (to keep serving an earlier version of it, register that one with RegisterFormer)", def.Name())
	}
	if r.closed {
		return fmt.Errorf("registering workflow %s: the engine is already started", def.Name())
	}
	if r.former[def.Version()] {
		return fmt.Errorf("registering workflow %s: version %s is registered already as a former version", def.Name(), def.Version())
	}
	reg := &registration{def: def, handlers: h}
	r.registered[def.Name()] = reg
	r.serves[def.Version()] = reg
	r.known[def.Name()] = def
	r.names = append(r.names, def.Name())
	for _, items := range itemRegistrations(def, h) {
		r.registered[items.def.Name()] = items
		r.serves[items.def.Version()] = items
		r.names = append(r.names, items.def.Name())
	}
	sort.Strings(r.names)
	return nil
}

// registerFormer registers h as the code of def, a former version of a
// workflow: the engine serves its runs (and those of its map steps' items
// workflows) but neither triggers nor starts runs of it. It refuses a
// version served already, and any once registration is closed.
func (r *registry) registerFormer(def *Definition, h Handlers) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("registering former version %s: the engine is already started", def.Version())
	}
	if _, dup := r.serves[def.Version()]; dup {
		return fmt.Errorf("registering former version %s of workflow %s: this version is registered already", def.Version(), def.Name())
	}
	reg := &registration{def: def, handlers: h}
	r.serves[def.Version()] = reg
	r.former[def.Version()] = true
	for _, items := range itemRegistrations(def, h) {
		r.serves[items.def.Version()] = items
		r.former[items.def.Version()] = true
	}
	return nil
}

// itemRegistrations returns the registrations of def's map steps' items
// workflows: a map step's code runs in the runs of its items workflow.
func itemRegistrations(def *Definition, h Handlers) []*registration {
	var out []*registration
	for _, items := range def.itemDefinitions() {
		step := items.spec.Steps[0].Name
		out = append(out, &registration{def: items, handlers: Handlers{Steps: map[string]StepFunc{step: h.Steps[step]}}})
	}
	return out
}

// use makes def the definition that child workflow steps start for its
// workflow, unless another version of it is registered: a registered
// version keeps starting child runs.
func (r *registry) use(def *Definition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reg, ok := r.registered[def.Name()]; !ok || reg.def == def {
		r.known[def.Name()] = def
	}
}

// child returns the definition that child workflow steps start for a
// workflow, as far as this engine knows it.
func (r *registry) child(workflow string) (*Definition, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	def, ok := r.known[workflow]
	return def, ok
}

// close refuses further registrations: the engine is starting, and what
// it runs is fixed from now on. reopen undoes it when the start failed.
func (r *registry) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
}

func (r *registry) reopen() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = false
}

// registrations returns the registered workflows, by name.
func (r *registry) registrations() []*registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*registration, len(r.names))
	for i, n := range r.names {
		out[i] = r.registered[n]
	}
	return out
}

// served returns the versions this engine serves, sorted: the versions
// of the registered workflows, the former versions registered, and the
// stored versions found code-compatible (see serving.go). Claims take
// only their tasks, and the engine announces them (AnnounceWorker).
func (r *registry) served() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.serves))
	for v := range r.serves {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// workflowNames returns the names of the registered workflows, sorted.
func (r *registry) workflowNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.names)
}

// toCompare returns the registration of workflow when version, one of
// its stored versions, is neither served nor compared yet (serving.go).
func (r *registry) toCompare(workflow, version string) (*registration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg, ok := r.registered[workflow]
	if !ok || r.checked[version] || r.serves[version] != nil {
		return nil, false
	}
	return reg, true
}

// compared records that version was compared with a registered version:
// with reg, whose code it serves from now on; with nil, found not to be
// served.
func (r *registry) compared(version string, reg *registration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checked[version] = true
	if reg != nil {
		r.serves[version] = reg
	}
}

// handlers returns the code that runs the tasks of a workflow version
// this engine serves.
func (r *registry) handlers(version string) (Handlers, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg, ok := r.serves[version]
	if !ok {
		return Handlers{}, false
	}
	return reg.handlers, true
}

// isSaved reports whether a version is known to be in the store;
// markSaved records that it is.
func (r *registry) isSaved(version string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.saved[version]
}

func (r *registry) markSaved(version string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.saved[version] = true
}

// versionEvents returns the events that start a stored version and those
// it waits for by key, when this engine has read them; setVersionEvents
// records them. A version never changes, so a publish decodes each stored
// spec once per process.
func (r *registry) versionEvents(version string) (versionEvents, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events, ok := r.events[version]
	return events, ok
}

func (r *registry) setVersionEvents(version string, events versionEvents) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[version] = events
}
