package watchers

import (
	"github.com/gopurgatory/purgatory/internal/lifecycle"
	"github.com/gopurgatory/purgatory/internal/watchlist"
	"github.com/gopurgatory/purgatory/operation"
)

// DefaultShards is the number of shards when New is given zero. Kafka uses
// 512; BENCHMARKS.md has the measurement behind this default.
const DefaultShards = watchlist.DefaultShards

// Watchers is a keyed wait-list: operations wait under keys until an event
// on one of them completes them, with no deadline. A purgatory is
// Watchers plus deadlines, a reaper, metrics and Close; use Watchers alone
// when nothing waits for a deadline (or you keep your own). Its methods may
// be called from any goroutine; see the package documentation for the lock
// order and the costs.
type Watchers[K comparable] struct {
	w *watchlist.Watchers[K]
}

// New returns watchers with n shards, each a map of keys to lists with its
// own lock, rounded up to a power of two (DefaultShards when n <= 0).
func New[K comparable](n int) *Watchers[K] {
	return &Watchers[K]{w: watchlist.New[K](n, false)}
}

// unbound binds the operations of watchers alone: no timer, no observer.
var unbound = lifecycle.NewBinding(nil, nil)

// Watch submits op: it completes op at once if its condition holds (its
// OnComplete runs before Watch returns); otherwise it lists op under every
// key and tries once more, all under op's lock, so that an event between
// the first try and the listing is not missed. It reports whether this call
// completed op. It fails with ErrNoKeys without keys and
// operation.ErrSubmitted for an operation submitted before, op untouched.
// A panic in a callback is recovered and written to standard error with
// its stack, at most once a minute per callback (a purgatory logs and
// counts it). O(keys) amortised, no allocation but the lists' growth.
func (w *Watchers[K]) Watch(op operation.Operation, keys ...K) (bool, error) {
	if len(keys) == 0 {
		return false, ErrNoKeys
	}
	s := lifecycle.Lookup(op.OperationState())
	if done, err := lifecycle.Start(s, op, unbound, len(keys)); err != nil || done {
		return done, err
	}
	w.w.WatchAll(keys, s)
	return lifecycle.Listed(s), nil
}

// CheckAndComplete tries to complete the operations listed under key, on
// the calling goroutine, and returns how many it completed; their
// OnComplete ran before it returns. It first drops the key's entries of
// operations completed since its last check; those it completes stay
// listed until the next check or Purge. It holds the key's shard lock only
// to copy the list (on the stack up to 32 entries, one allocation beyond),
// never while trying: callbacks may call back in. O(operations under key).
func (w *Watchers[K]) CheckAndComplete(key K) int { return w.w.TryCompleteWatched(key) }

// Remove drops key's list and returns its operations that are still
// pending, oldest first, for the caller to answer (ForceComplete). They
// stay listed under their other keys. O(operations under key).
func (w *Watchers[K]) Remove(key K) []operation.Operation {
	states := w.w.Remove(key)
	out := make([]operation.Operation, 0, len(states))
	for _, s := range states {
		out = append(out, lifecycle.Of(s).(operation.Operation))
	}
	return out
}

// Purge drops the entries of completed operations (completed through
// another key, or by ForceComplete) from every list, and the lists left
// empty, and returns how many entries it dropped. Call it now and then:
// until then each such entry keeps its operation reachable. It holds each
// shard's lock while it walks that shard's lists: O(entries).
func (w *Watchers[K]) Purge() int { return w.w.Purge() }

// Watched returns the number of entries: an operation counts once per key,
// until its entry is dropped. O(shards).
func (w *Watchers[K]) Watched() int { return w.w.Watched() }

// Keys returns the number of keys with a list. O(shards).
func (w *Watchers[K]) Keys() int { return w.w.Keys() }
