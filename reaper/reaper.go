package reaper

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultMaxWait bounds each wait of the clock, as Kafka's
// ExpiredOperationReaper does (200ms): it is also how long a purge can lag.
const DefaultMaxWait = 200 * time.Millisecond

// A Clock is what the reaper advances: a timer.Timer.
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
// ticks faster than that when idle.
type Reaper struct {
	clock   Clock         // nil: purge only
	purger  Purger        // nil: advance only
	maxWait time.Duration // immutable
	log     *zap.Logger

	mu      sync.Mutex // guards the following
	started bool
	cancel  context.CancelFunc
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

// Stop stops the goroutine and waits for it to exit; it interrupts a wait
// of the clock at once. It is idempotent.
func (r *Reaper) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel = nil
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

func (r *Reaper) run(ctx context.Context) {
	defer close(r.done)
	r.log.Debug("reaper started", zap.Duration("max_wait", r.maxWait))
	var tick *time.Ticker
	if r.clock == nil {
		tick = time.NewTicker(r.maxWait)
		defer tick.Stop()
	}
	for {
		if r.clock != nil {
			r.clock.AdvanceClock(ctx, r.maxWait)
		} else {
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			r.log.Debug("reaper stopped")
			return
		}
		if r.purger != nil {
			r.purger.MaybePurge()
		}
	}
}
