package server

import "sync"

// entry is a key's current value and its version, the number of POSTs
// the key has had. Its value is never written after it is stored: a POST
// stores a new slice, so an entry may be handed out and read without a
// lock.
type entry struct {
	version uint64
	value   []byte
}

// store holds every key's entry. It is the state the waits read: a wait's
// TryComplete reads it under the wait's lock (lock order: an operation's
// lock, then mu), and a POST writes it and releases mu before it calls
// CheckAndComplete, so that no lock of the store is held while the
// purgatory runs TryCompletes.
type store struct {
	maxKeys int // immutable

	mu      sync.RWMutex // guards the following
	entries map[string]entry
}

func newStore(maxKeys int) *store {
	return &store{maxKeys: maxKeys, entries: make(map[string]entry)}
}

// get returns key's entry; a key never stored has version 0 and no value.
func (s *store) get(key string) entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.entries[key]
}

// version returns key's version: what a wait's TryComplete compares with.
func (s *store) version(key string) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.entries[key].version
}

// put stores value as key's next version and returns that version. A key
// that would be one past maxKeys is refused with errTooManyKeys. The
// caller wakes key's waiters afterwards, with the lock released.
func (s *store) put(key string, value []byte) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok && len(s.entries) >= s.maxKeys {
		return 0, errTooManyKeys
	}
	e = entry{version: e.version + 1, value: value}
	s.entries[key] = e
	return e.version, nil
}

// len returns the number of keys stored.
func (s *store) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.entries)
}
