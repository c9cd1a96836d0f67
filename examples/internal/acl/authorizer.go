package acl

import (
	"sync"
	"sync/atomic"
)

// Authorizer holds a set of bindings and answers, for each request, whether
// a principal may do an operation on a resource: Kafka's StandardAuthorizer.
// It is safe for concurrent use; its checks take no lock and allocate
// nothing (see the package doc).
type Authorizer struct {
	// Immutable after New.
	superUsers   map[string]struct{}
	allowIfNoACL bool

	// snap is the current bindings, replaced whole by each write; readers
	// load it once per call and use it without a lock.
	snap atomic.Pointer[snapshot]

	mu sync.Mutex // serializes the writers: held from loading snap to storing its successor
}

// New returns an Authorizer with no bindings, configured by opts; it
// returns [ErrInvalidOption] for an option it cannot use.
func New(opts ...Option) (*Authorizer, error) {
	var cfg config
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &Authorizer{
		superUsers:   make(map[string]struct{}, len(cfg.superUsers)),
		allowIfNoACL: cfg.allowIfNoACL,
	}
	for _, p := range cfg.superUsers {
		a.superUsers[p] = struct{}{}
	}
	a.snap.Store(new(snapshot))
	return a, nil
}

// Add adds bindings and returns those that were new, in the order given,
// each once: adding a binding already held succeeds and changes nothing,
// as Kafka's AclControlManager.createAcls does. If any binding is invalid
// (see [Binding.Validate]), Add returns its error and adds none. Readers
// see all of the new bindings or none. O(len(bindings) × (name length +
// fanout)); a write copies only the paths it changes, so that replaying
// bindings one by one stays cheap.
func (a *Authorizer) Add(bindings ...Binding) ([]Binding, error) {
	for _, b := range bindings {
		if err := b.Validate(); err != nil {
			return nil, err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	next := *a.snap.Load()
	var added []Binding
	for _, b := range bindings {
		if next.add(b) {
			added = append(added, b)
		}
	}
	if len(added) > 0 {
		a.publishLocked(&next)
	}
	return added, nil
}

// Remove removes the bindings f selects and returns them, in the order of
// [Authorizer.Describe]: Kafka's deleteAcls for one filter. An invalid
// filter (see [Filter.Validate]) removes nothing and returns its error.
// Readers see all of the removals or none. O(what Describe visits, plus
// the paths to the removed bindings).
func (a *Authorizer) Remove(f Filter) ([]Binding, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	next := *a.snap.Load()
	removed := next.collect(f)
	for _, b := range removed {
		next.remove(b)
	}
	if len(removed) > 0 {
		a.publishLocked(&next)
	}
	return removed, nil
}

// Replace makes bindings the whole set, duplicates dropped: how a broker
// loads a snapshot of the metadata log. If any binding is invalid, Replace
// returns its error and changes nothing. Readers see the old set or the
// new one, never a mix. O(len(bindings) × name length).
func (a *Authorizer) Replace(bindings []Binding) error {
	for _, b := range bindings {
		if err := b.Validate(); err != nil {
			return err
		}
	}
	var next snapshot
	for _, b := range bindings {
		next.add(b)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.publishLocked(&next)
	return nil
}

// Describe returns the bindings f selects (Kafka's Authorizer.acls), in a
// deterministic order: by resource type, name and pattern type, so that
// the bindings of one resource pattern are adjacent, as DescribeAcls
// answers them, then by principal, host, operation and permission. An
// invalid filter returns its error. It takes no lock. O(bindings) for a
// filter without a name, O(name length + bindings returned) with one.
func (a *Authorizer) Describe(f Filter) ([]Binding, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return a.snap.Load().collect(f), nil
}

// Len returns the number of bindings held. O(1).
func (a *Authorizer) Len() int { return a.snap.Load().count }

// publishLocked makes next the snapshot readers see.
//
// REQUIRES: a.mu held, and next built from the snapshot loaded under it.
func (a *Authorizer) publishLocked(next *snapshot) {
	if invariants {
		next.verify()
	}
	a.snap.Store(next)
}
