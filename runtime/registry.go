package runtime

import (
	"fmt"
	"slices"
	"sort"
	"sync"
)

// registry is what an engine knows of workflows: the definitions it has
// compiled or loaded, by version; the workflows whose code it runs, by
// name; the definition that child workflow steps start, by name; and the
// versions it knows to be in the store. It only keeps them: compiling,
// loading and saving definitions are the engine's (engine.go, runs.go).
type registry struct {
	mu         sync.Mutex
	defs       map[string]*Definition   // by version
	registered map[string]*registration // by workflow name
	names      []string                 // registered workflow names, sorted
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
		return fmt.Errorf("registering workflow %s: already registered", def.Name())
	}
	if r.closed {
		return fmt.Errorf("registering workflow %s: the engine is already started", def.Name())
	}
	r.registered[def.Name()] = &registration{def: def, handlers: h}
	r.known[def.Name()] = def
	r.names = append(r.names, def.Name())
	for _, items := range def.itemDefinitions() {
		// A map step's code runs in the runs of its items workflow.
		step := items.spec.Steps[0].Name
		r.registered[items.Name()] = &registration{def: items, handlers: Handlers{Steps: map[string]StepFunc{step: h.Steps[step]}}}
		r.names = append(r.names, items.Name())
	}
	sort.Strings(r.names)
	return nil
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

// versions returns the versions of the registered workflows, by name.
func (r *registry) versions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.names))
	for i, n := range r.names {
		out[i] = r.registered[n].def.Version()
	}
	return out
}

// workflowNames returns the names of the registered workflows, sorted.
func (r *registry) workflowNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.names)
}

// handlers returns the registered code of a workflow.
func (r *registry) handlers(workflow string) (Handlers, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg, ok := r.registered[workflow]
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
