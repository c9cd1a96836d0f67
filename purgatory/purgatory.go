package purgatory

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/reaper"
	"github.com/gopurgatory/purgatory/timer"
	"github.com/gopurgatory/purgatory/watchers"
)

// Purgatory holds delayed operations until their condition holds or their
// deadline passes, and answers each exactly once (Kafka's
// DelayedOperationPurgatory). K is the type of the keys operations are
// watched under: a topic-partition, a group id. See the package
// documentation for the guarantees and the lock order.
type Purgatory[K comparable] struct {
	name          string // immutable, as everything up to mu
	w             *watchers.Watchers[K]
	tm            *timer.Timer
	ownTimer      bool
	reaper        *reaper.Reaper // nil when off
	purgeInterval int64
	log           *zap.Logger
	m             *metrics // nil without a Registerer

	// estimated is what Kafka's estimatedTotalOperations was at the last
	// purge: the operations waiting then. Those watched since are counted
	// by the watcher shards, under the lock they take anyway (Counts), so
	// that submitting touches no counter shared between cores. delayed
	// counts the operations on a shared timer and not completed; with its
	// own timer the purgatory asks the timer instead (Kafka's numDelayed is
	// the timer's size too), which spares two atomic updates per operation.
	estimated atomic.Int64
	delayed   atomic.Int64
	closed    atomic.Bool

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
	p := &Purgatory[K]{
		name:          name,
		w:             watchers.New[K](cfg.shards),
		tm:            cfg.timer,
		purgeInterval: int64(cfg.purgeInterval),
		log:           cfg.logger.With(zap.String("purgatory", name)),
	}
	if p.tm == nil {
		topts := append([]timer.Option{timer.WithLogger(p.log), timer.WithAutoAdvance(false)}, cfg.timerOpts...)
		if cfg.clock != nil {
			topts = append(topts, timer.WithClock(cfg.clock))
		}
		tm, err := timer.New(topts...)
		if err != nil {
			return nil, fmt.Errorf("purgatory %s: %w", name, err)
		}
		p.tm, p.ownTimer = tm, true
	}
	if cfg.registerer != nil {
		m, err := newMetrics(cfg.registerer, name, p.Watched, p.Delayed)
		if err != nil {
			p.closeTimer()
			return nil, fmt.Errorf("purgatory %s: %w", name, err)
		}
		p.m = m
	}
	if cfg.reaper {
		var clock reaper.Clock
		if p.ownTimer {
			clock = p.tm
		}
		r, err := reaper.New(clock, p, cfg.reaperWait, p.log)
		if err != nil {
			p.closeTimer()
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
// holds (OnComplete runs before TryCompleteElseWatch returns, and op is never
// watched nor timed); otherwise it watches op under every key and puts its
// deadline, timeout from now, on the timer. It reports whether op completed
// during the call.
//
// The order is Kafka's and closes every race: under op's lock, try; watch
// under each key; try again; then, with the lock released, add the deadline,
// and take it off again if op completed meanwhile. An event between the
// first try and the watch is seen by the second try; one after it finds op
// watched.
//
// It fails with ErrNoKeys without keys, ErrSubmitted for an operation
// submitted before and ErrClosed after Close; op is then untouched. If its
// deadline cannot be set (a shared timer was closed, or the timer is at its
// cap) op is answered at once with outcome Closed and the timer's error is
// returned. The timeout is a duration, not
// a deadline, as Kafka's delayMs; a timeout <= 0 expires op at once unless
// its condition holds. No allocation beyond the watcher lists' growth.
func (p *Purgatory[K]) TryCompleteElseWatch(op operation.Operation, timeout time.Duration, keys []K) (bool, error) {
	if len(keys) == 0 {
		return false, ErrNoKeys
	}
	if p.closed.Load() {
		return false, ErrClosed
	}
	s, done, err := operation.Submit(op, p.tm, p, func(s *operation.State) { p.w.WatchAll(keys, s) })
	if err != nil || done {
		return done, err
	}

	scheduled, err := operation.Schedule(s, timeout, !p.ownTimer)
	if scheduled {
		p.delayed.Add(1) // undone by Completed or CancelForKey, exactly once
	}
	if err != nil {
		// The timer is closed (a shared one, closed by its owner) or at its
		// cap: op cannot wait, so it is answered now, as Closed.
		operation.CompleteClosed(s)
		return false, fmt.Errorf("purgatory %s: cannot time the operation: %w", p.name, err)
	}
	if p.closed.Load() {
		// Close ran since the check above and may not have seen op's
		// watch: answer it here. The compare-and-swap makes one of the two
		// the only one.
		operation.CompleteClosed(s)
	}
	return false, nil
}

// CheckAndComplete tries to complete the operations watched under key, after
// an event on it (records appended to a partition, a member joined), and
// returns how many it completed; their OnComplete ran before it returns. It
// takes no lock while trying, only each operation's own around its
// TryComplete, so it may be called from a callback. Call it without holding a
// lock that a TryComplete takes. It first drops the key's entries of
// operations completed since its last check; those it completes itself
// stay listed (and counted by Watched) until the next check or purge.
// O(operations watched under key).
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

// Watched returns the number of watch entries: an operation counts once per
// key, until it is purged (Kafka's PurgatorySize). O(shards).
func (p *Purgatory[K]) Watched() int { return p.w.Watched() }

// Delayed returns the number of operations waiting for their deadline
// (Kafka's NumDelayedOperations). O(1).
func (p *Purgatory[K]) Delayed() int {
	if p.ownTimer {
		return p.tm.Size()
	}
	return int(p.delayed.Load())
}

// CancelForKey stops watching key and returns the operations that were
// watched under it and still pending, oldest first. As in Kafka they are
// taken off the timer but not completed: the caller answers each, with
// ForceComplete, which completes it with outcome Cancelled (or returns false
// if another of its keys completed it meanwhile: it is answered once either
// way). A missing key returns nil.
func (p *Purgatory[K]) CancelForKey(key K) []operation.Operation {
	states := p.w.Remove(key)
	var out []operation.Operation
	for _, s := range states {
		pending, scheduled := operation.Cancel(s)
		if scheduled && !p.ownTimer {
			p.delayed.Add(-1) // off the timer; Completed will not count it again
		}
		if pending {
			out = append(out, operation.Of(s))
		}
	}
	return out
}

// MaybePurge drops completed operations from the watcher lists if enough
// have accumulated: more than the purge interval (Kafka's condition), and at
// least as many as the operations still waiting, so that a purge always
// removes at least as many entries as it keeps and never walks long lists of
// live operations to remove a few. The reaper calls it after each round.
//
// The count of completed entries is an estimate, as in Kafka (operations
// watched minus those waiting), and it can fall short: an expiration handed
// to the timer's workers has left the waiting count before its operation
// completes, so a purge in that window keeps entries the estimate then
// forgets. Hence the second rule: once nothing waits, whatever is still
// listed has completed or is about to, and it is purged, round after round,
// until the lists are empty. That walk touches nothing live.
func (p *Purgatory[K]) MaybePurge() {
	delayed := int64(p.Delayed())
	lists, added := p.w.Counts()
	if delayed == 0 {
		if lists > 0 {
			p.purge()
		}
		return
	}
	garbage := p.estimated.Load() + int64(added) - delayed
	if garbage <= p.purgeInterval || garbage < delayed {
		return
	}
	p.purge()
}

// purge resets the estimate and walks the lists.
func (p *Purgatory[K]) purge() int {
	// Operations completed during the purge make this a slight
	// overestimate, as in Kafka; the watcher shards restart their counts
	// (Counts) as the purge reaches them.
	p.estimated.Store(int64(p.Delayed()))
	start := time.Now()
	purged := p.w.Purge()
	if p.m != nil {
		p.m.purges.Inc()
		p.m.purged.Add(float64(purged))
	}
	p.log.Debug("purged watcher lists", zap.Int("purged", purged), zap.Duration("took", time.Since(start)))
	return purged
}

// Purge drops completed operations from the watcher lists now, and returns
// how many entries it dropped.
func (p *Purgatory[K]) Purge() int { return p.purge() }

// Close stops the reaper, then answers every operation still pending: each
// completes with outcome Closed (OnComplete runs, on the goroutine calling
// Close; OnExpiration does not). Then it closes the purgatory's own timer,
// which stops its goroutines (a shared timer is left to its owner). No
// goroutine of the purgatory is left running. TryCompleteElseWatch fails with
// ErrClosed afterwards; an operation submitted concurrently with Close is
// answered as Closed too. Close is idempotent and returns nil.
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
			operation.CompleteClosed(s)
		}
		// 3. Stop the timer's goroutines; expirations it had already
		// handed over run first, and find their operations answered.
		p.closeTimer()
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

// Completed implements operation.Observer: it keeps the counts and metrics.
func (p *Purgatory[K]) Completed(op operation.Operation, o operation.Outcome, late time.Duration) {
	if !p.ownTimer && operation.WasScheduled(op.OperationState()) {
		p.delayed.Add(-1)
	}
	if p.m != nil {
		p.m.completions[o].Inc()
		if o == operation.Expired {
			p.m.lateness.Observe(late.Seconds())
		}
	}
}

// Panicked implements operation.Observer: it logs and counts the panic.
func (p *Purgatory[K]) Panicked(op operation.Operation, callback string, v any) {
	if p.m != nil {
		p.m.panics.Inc()
	}
	p.log.Error("operation callback panicked; the purgatory goes on",
		zap.String("callback", callback), zap.Any("panic", v), zap.Stack("stack"))
}
