package reaper

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/internal/goid"
)

// DefaultMaxWait bounds each wait of the clock, as Kafka's
// ExpiredOperationReaper does (200ms): it is also how long a purge can lag
// when nothing asks for one (see Wake).
const DefaultMaxWait = 200 * time.Millisecond

// A Clock is what the reaper advances: a *timer.Timer built with
// timer.WithAutoAdvance(false). AdvanceClock must return when ctx is done.
type Clock interface {
	AdvanceClock(ctx context.Context, maxWait time.Duration) bool
}

// A Purger drops completed entries from watcher lists when enough have
// accumulated; it decides whether a call does anything.
type Purger interface {
	MaybePurge()
}

// ErrNothingToDo is returned by New when the reaper would have neither a
// clock to advance nor a purger to call.
var ErrNothingToDo = errors.New("reaper: no clock and no purger")

// Reaper is the goroutine of a purgatory that expires operations and purges
// watcher lists (Kafka's ExpiredOperationReaper). With a clock, each round
// advances it, waiting at most MaxWait for the earliest deadline, then gives
// the purger its turn; without one (the timer is shared and driven by its
// owner), it wakes every MaxWait to give the purger its turn. It never
// ticks faster than that when idle. Expired operations complete inside the
// clock's advance: on the timer's workers, or on the reaper's goroutine
// itself when the timer has none.
type Reaper struct {
	clock   Clock         // nil: purge only
	purger  Purger        // nil: advance only
	maxWait time.Duration // immutable
	log     *zap.Logger

	id atomic.Uint64 // the goroutine's id, written once when it starts

	mu      sync.Mutex // guards the following
	started bool
	cancel  context.CancelFunc // stops the goroutine
	wake    context.CancelFunc // ends the current round's wait early; nil once used
	done    chan struct{}
}

// New returns a stopped reaper for clock and purger (either may be nil, not
// both). maxWait <= 0 means DefaultMaxWait.
func New(clock Clock, purger Purger, maxWait time.Duration, log *zap.Logger) (*Reaper, error) {
	if clock == nil && purger == nil {
		return nil, ErrNothingToDo
	}
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Reaper{clock: clock, purger: purger, maxWait: maxWait, log: log}, nil
}

// Start starts the goroutine. Starting a started or stopped reaper does
// nothing: a reaper runs once.
func (r *Reaper) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go r.run(ctx)
}

// Wake ends the current round's wait, so that the purger gets its turn now
// rather than up to MaxWait later: a purgatory calls it when completed
// operations have piled up. It does not block; wakes while the reaper is
// busy are merged into one. The first Wake of a round costs the context of
// the next wait (an allocation); the others are free.
func (r *Reaper) Wake() {
	r.mu.Lock()
	wake := r.wake
	r.wake = nil
	r.mu.Unlock()
	if wake != nil {
		wake()
	}
}

// Stop stops the goroutine and waits for it to exit; it interrupts a wait
// of the clock at once. It is idempotent. Called from the reaper's own
// goroutine (an operation expiring there closes its purgatory), it stops the
// reaper without waiting for itself: the goroutine exits when the call
// that made it returns.
func (r *Reaper) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel = nil
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	if r.id.Load() == goid.ID() {
		return
	}
	<-done
}

func (r *Reaper) run(stop context.Context) {
	defer close(r.done)
	r.id.Store(goid.ID())
	r.log.Debug("reaper started", zap.Duration("max_wait", r.maxWait))
	var tick *time.Ticker
	if r.clock == nil {
		tick = time.NewTicker(r.maxWait)
		defer tick.Stop()
	}
	var round context.Context // ended by Wake, or by Stop through stop
	for {
		if round == nil || round.Err() != nil {
			ctx, wake := context.WithCancel(stop)
			r.mu.Lock()
			round, r.wake = ctx, wake
			r.mu.Unlock()
		}
		if r.clock != nil {
			r.clock.AdvanceClock(round, r.maxWait)
		} else {
			select {
			case <-tick.C:
			case <-round.Done():
			}
		}
		if stop.Err() != nil {
			r.log.Debug("reaper stopped")
			return
		}
		if r.purger != nil {
			r.purger.MaybePurge()
		}
	}
}
