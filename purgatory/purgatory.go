package purgatory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
	"github.com/gopurgatory/purgatory/internal/watchlist"
	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/reaper"
	"github.com/gopurgatory/purgatory/timer"
)

// NoTimeout, given as a timeout, watches an operation without a deadline
// (Kafka's timerEnabled = false): only its condition, ForceComplete, its
// context, CancelForKey's caller or Close completes it. It costs nothing on
// the timer and is not counted by Delayed.
const NoTimeout time.Duration = math.MaxInt64

// Purgatory holds delayed operations until their condition holds or their
// deadline passes, and answers each exactly once (Kafka's
// DelayedOperationPurgatory). K is the type of the keys operations are
// watched under: a topic-partition, a group id. See the package
// documentation for the guarantees, the goroutines and the lock order.
type Purgatory[K comparable] struct {
	name     string // immutable, as everything up to obs
	w        *watchlist.Watchers[K]
	tm       *timer.Timer
	ownTimer bool
	reaper   *reaper.Reaper // nil when off
	log      *zap.Logger
	obs      completions        // what its operations report their completion to
	bind     *lifecycle.Binding // tm and &obs, which every operation is bound to
	closed   atomic.Bool

	// quietAfter is how long no completion may leave garbage before the
	// reaper empties the lists of whatever is left: its wait. Immutable.
	quietAfter time.Duration

	purgeMu   sync.Mutex        // one purge at a time; guards done
	done      watchlist.AddrSet // the operations a purge looks for, rebuilt by each
	closeOnce sync.Once
}

// New returns a purgatory named name (the metrics' purgatory label) and
// starts its reaper.
func New[K comparable](name string, opts ...Option) (*Purgatory[K], error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := zap.NewNop()
	if cfg.logger != nil {
		log = cfg.logger.With(zap.String("purgatory", name))
	}
	p := &Purgatory[K]{
		name: name,
		w:    watchlist.New[K](cfg.shards, cfg.purgeInterval == 0),
		tm:   cfg.timer,
		log:  log,

		quietAfter: cfg.reaperWait,
	}
	p.obs.name = name
	if cfg.logger != nil {
		p.obs.log = p.log // else panics go to standard error (package panics)
	}
	if cfg.purgeInterval > 0 {
		p.obs.retention = newRetention(int64(cfg.purgeInterval), p, &p.obs.tally)
	} else {
		p.obs.release = p.w.Release
	}
	if p.tm == nil {
		topts := []timer.Option{timer.WithAutoAdvance(false)}
		if cfg.logger != nil {
			topts = append(topts, timer.WithLogger(p.log)) // else the timer writes its panics to standard error too
		}
		topts = append(topts, cfg.timerOpts...)
		if cfg.clock != nil {
			topts = append(topts, timer.WithClock(cfg.clock))
		}
		tm, err := timer.New(topts...)
		if err != nil {
			return nil, fmt.Errorf("purgatory %s: %w", name, err)
		}
		p.tm, p.ownTimer = tm, true
	}
	p.obs.ownTimer = p.ownTimer
	p.bind = lifecycle.NewBinding(p.tm, &p.obs)
	if cfg.registerer != nil {
		m, err := newMetrics(cfg.registerer, name, p.Pending, p.Watched, p.Delayed, p.Garbage)
		if err != nil {
			p.closeTimer()
			return nil, fmt.Errorf("purgatory %s: %w", name, err)
		}
		p.obs.m = m
	}
	var clock reaper.Clock
	if p.ownTimer {
		clock = p.tm
	}
	var pur reaper.Purger
	if p.obs.retention != nil {
		pur = (*purger[K])(p)
	}
	if cfg.reaper && (clock != nil || pur != nil) {
		r, err := reaper.New(clock, pur, cfg.reaperWait, p.log)
		if err != nil {
			p.closeTimer()
			p.obs.m.unregister()
			return nil, err
		}
		p.reaper = r
		r.Start()
	}
	return p, nil
}

// Name returns the purgatory's name.
func (p *Purgatory[K]) Name() string { return p.name }

// TryCompleteElseWatch submits op: it completes op at once if its condition
// holds (OnComplete runs before TryCompleteElseWatch returns, and op is
// never watched nor timed); otherwise it watches op under every key and
// puts its deadline, timeout from now, on the timer (with NoTimeout, none).
// It reports whether this call completed op, its OnComplete having run.
//
// The order is Kafka's and closes every race: under op's lock, try; watch
// under each key; try again; then, with the lock released, add the
// deadline, and take it off again if op completed meanwhile. An event
// between the first try and the watch is seen by the second try; one after
// it finds op watched.
//
// # One rule for errors
//
// An error means op was not taken, and its OnComplete will never run
// because of this call: the caller answers it. That is ErrClosed after
// Close, ErrNoKeys without keys, and ErrSubmitted for an operation submitted
// before. Without an error, op is the purgatory's: its OnComplete runs
// exactly once, before the call returns if it reports true. So an operation
// the purgatory cannot keep waiting is answered, not refused: with outcome
// Closed when Close (or the close of a shared timer) races the submission,
// Rejected when the timer is at its cap (timer.WithMaxPending).
//
// The timeout is a duration, not a deadline, as Kafka's delayMs; a timeout
// <= 0 expires op at once unless its condition holds. It runs on the
// calling goroutine; TryComplete runs twice at most, under op's lock. Cost:
// O(keys), with no allocation beyond the watch lists' growth: the keys are
// not kept, and one key needs no slice.
func (p *Purgatory[K]) TryCompleteElseWatch(op operation.Operation, timeout time.Duration, keys ...K) (bool, error) {
	return p.submit(nil, op, timeout, keys)
}

// TryCompleteElseWatchContext is TryCompleteElseWatch for an operation tied
// to ctx (a client connection's context, a request's): when ctx is
// cancelled before op completes, op completes with outcome ContextDone, on
// the goroutine that context.AfterFunc runs, so nothing is left waiting for
// its deadline when its client has gone; and a deadline of ctx earlier than
// timeout is op's deadline (it then expires, outcome Expired). A ctx done
// already is refused with its error, op untouched, by the rule for errors.
// The tie is undone when op completes, so a long-lived ctx retains
// nothing. Cost: what TryCompleteElseWatch costs, plus context.AfterFunc's
// registration and the operation's extras (BENCHMARKS.md counts the
// allocations); a ctx that is never done (context.Background) costs
// nothing more.
func (p *Purgatory[K]) TryCompleteElseWatchContext(ctx context.Context, op operation.Operation, timeout time.Duration, keys ...K) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	return p.submit(ctx, op, timeout, keys)
}

func (p *Purgatory[K]) submit(ctx context.Context, op operation.Operation, timeout time.Duration, keys []K) (bool, error) {
	if len(keys) == 0 {
		return false, ErrNoKeys
	}
	if uint64(len(keys)) > lifecycle.MaxKeys {
		return false, fmt.Errorf("%w: %d keys", ErrTooManyKeys, len(keys))
	}
	if p.closed.Load() {
		return false, ErrClosed
	}
	s := lifecycle.Lookup(op.OperationState())
	if done, err := lifecycle.Start(s, op, p.bind, len(keys)); err != nil || done {
		return done, err
	}
	p.w.WatchAll(keys, s)
	if lifecycle.Listed(s) {
		return true, nil
	}

	if timeout != NoTimeout {
		scheduled, err := lifecycle.Schedule(s, timeout, !p.ownTimer)
		if scheduled {
			p.obs.delayed.Add(1) // undone by Completed or CancelForKey, exactly once
		}
		if err != nil {
			// op is watched, so it cannot be handed back untouched: it is
			// answered, and its outcome says why.
			o := lifecycle.Closed
			if errors.Is(err, timer.ErrFull) {
				o = lifecycle.Rejected
			}
			return lifecycle.CompleteWith(s, o), nil
		}
	}
	if ctx != nil {
		lifecycle.TieContext(ctx, s)
	}
	if p.closed.Load() {
		// Close ran since the check above and may not have seen op's
		// watch: answer it here. The compare-and-swap makes one of the two
		// the only one.
		return lifecycle.CompleteWith(s, lifecycle.Closed), nil
	}
	return false, nil
}

// CheckAndComplete tries to complete the operations watched under key, after
// an event on it (records appended to a partition, a member joined), and
// returns how many it completed; their OnComplete ran, on the calling
// goroutine, before it returns. It takes no lock while trying, only each
// operation's own around its TryComplete, so it may be called from a
// callback. Call it without holding a lock that a TryComplete takes. An
// operation whose lock is held by a try of that same operation (its
// TryComplete calling CheckAndComplete on its own key, or another check
// racing this one) is left to that try, which tries once more when it
// ends: no lock is waited for that cannot be released.
//
// It first drops the key's entries of operations completed since its last
// check; those it completes itself stay listed until the next check or
// purge (with a purge interval of 0, they go before it returns).
// O(operations watched under key): it copies their pointers, on the stack
// up to 32 and to the heap beyond (one allocation).
func (p *Purgatory[K]) CheckAndComplete(key K) int {
	n := p.w.TryCompleteWatched(key)
	if n > 0 {
		// Check first: building the fields (boxing the key) allocates even
		// when debug is off, and this is the hot path.
		if ce := p.log.Check(zapcore.DebugLevel, "operations completed"); ce != nil {
			ce.Write(zap.Any("key", key), zap.Int("completed", n))
		}
	}
	return n
}

// Watched returns the number of watch entries, not of operations: an
// operation counts once per key it is watched under, and its entries stay
// counted after it completed until a check of the key or a purge drops
// them (Kafka's PurgatorySize). Garbage says how many of them belong to
// completed operations; Pending counts the operations waiting. O(shards
// of the watch lists, 256 by default), each under its lock.
func (p *Purgatory[K]) Watched() int { return p.w.Watched() }

// Delayed returns the number of operations waiting for their deadline
// (Kafka's NumDelayedOperations); those watched with NoTimeout, and those
// CancelForKey took off the timer, are not counted (Pending counts them). O(timer shards) with its own timer, O(1) on a shared one.
func (p *Purgatory[K]) Delayed() int {
	if p.ownTimer {
		return p.tm.Size()
	}
	return int(p.obs.delayed.Load())
}

// CancelForKey stops watching key and returns the operations that were
// watched under it and still pending, oldest first. As in Kafka they are
// taken off the timer but not completed: the caller answers each, with
// ForceComplete, which completes it with outcome Cancelled (or returns false
// if another of its keys completed it meanwhile: it is answered once either
// way). An operation returned here never expires afterwards, even if its
// submission is still running. A missing key returns nil. O(operations
// watched under key).
func (p *Purgatory[K]) CancelForKey(key K) []operation.Operation {
	states := p.w.Remove(key)
	var out []operation.Operation
	for _, s := range states {
		pending, scheduled := lifecycle.Cancel(s)
		if scheduled && !p.ownTimer {
			p.obs.delayed.Add(-1) // off the timer; Completed will not count it again
		}
		if pending {
			out = append(out, lifecycle.Of(s).(operation.Operation))
		}
	}
	return out
}

// Purge drops the entries of completed operations from the watch lists now,
// and the lists left empty, and returns how many entries it dropped. The
// reaper purges by itself (see the package documentation); Purge is for a
// caller that wants the memory back at a moment of its choosing. It holds
// each watch list shard's lock while it walks that shard: O(watch entries).
func (p *Purgatory[K]) Purge() int {
	p.purgeMu.Lock()
	defer p.purgeMu.Unlock()
	return p.purgeLocked(true)
}

// purgeLocked drops the entries of completed operations. With full, or
// when the completions since the last purge were not all recorded, it
// reads every listed operation; otherwise it looks only for the entries
// of the operations the completions recorded (watchlist.AddrSet), which
// costs a lookup per entry instead of a cache miss. Should that leave
// garbage past the limit (entries listed after their operation completed
// and was looked for: a submission racing a ForceComplete), the next
// purge reads every operation.
//
// REQUIRES: p.purgeMu held.
func (p *Purgatory[K]) purgeLocked(full bool) int {
	start := time.Now()
	var purged int
	if r := p.obs.retention; r == nil {
		purged = p.w.Purge()
	} else {
		r.mu.Lock()
		full = full || r.fullNext
		r.fullNext = false
		r.mu.Unlock()
		set := &p.done
		if full {
			set = nil // the records are dropped unread
		}
		if !p.obs.tally.take(set) {
			full = true
		}
		if full {
			purged = p.w.Purge()
		} else {
			purged = p.w.PurgeKnown(&p.done)
		}
		// Read the lists again: the bound starts afresh from what the purge
		// left, so that the next reading comes when garbage has grown again.
		if g := r.garbage(); !full && g > r.limit.Load() {
			r.mu.Lock()
			r.fullNext = true
			r.mu.Unlock()
		}
	}
	if m := p.obs.m; m != nil {
		m.purges.Inc()
		m.purged.Add(float64(purged))
	}
	p.log.Debug("purged watcher lists", zap.Int("purged", purged), zap.Duration("took", time.Since(start)))
	return purged
}

// Close stops the reaper, then answers every operation still pending: each
// completes with outcome Closed (OnComplete runs, on the goroutine calling
// Close; OnExpiration does not). Then it closes the purgatory's own timer,
// which stops its goroutines (a shared timer is left to its owner), and
// unregisters its metrics, so that a purgatory of the same name can be made
// again on the same Registerer. No goroutine of the purgatory is left
// running; Close may be called from a callback, even one running on the
// purgatory's own goroutines (it then waits for all but the one it runs
// on, which exits when the callback returns). TryCompleteElseWatch fails
// with ErrClosed afterwards; an operation submitted concurrently with Close
// is answered as Closed. Close is idempotent and returns nil.
func (p *Purgatory[K]) Close() error {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		// 1. No more expirations or purges from the reaper.
		if p.reaper != nil {
			p.reaper.Stop()
		}
		// 2. Answer every pending operation; each is on the lists of the
		// keys it is watched under until it completes.
		pending := p.w.RemoveAll()
		for _, s := range pending {
			lifecycle.CompleteWith(s, lifecycle.Closed)
		}
		// 3. Stop the timer's goroutines; expirations it had already
		// handed over run first, and find their operations answered.
		p.closeTimer()
		// 4. Give the metrics' names back.
		p.obs.m.unregister()
		p.log.Debug("purgatory closed", zap.Int("answered", len(pending)))
	})
	return nil
}

func (p *Purgatory[K]) closeTimer() {
	if !p.ownTimer {
		return
	}
	// Every deadline left belongs to an operation answered above (or
	// completed meanwhile), so nothing is lost with these tasks.
	p.tm.Close()
}
