package newcomer

import (
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// Watchdogs keep leases alive, as Redisson's lock watchdog does: Lock
// renews a lease every period, a fixed delay after the previous renewal
// ended, until Unlock.
type Watchdogs interface {
	// Lock starts renewing: renew runs every period until Unlock.
	Lock(period time.Duration, renew func()) Lease
	// Close stops what the watchdogs own.
	Close()
}

// A Lease is a lock held and renewed by its watchdog.
type Lease interface {
	// Unlock stops the renewals: once it returns, renew is not running
	// and never runs again, so a released lock is never renewed.
	Unlock()
}

// timerWatchdogs is the watchdog on the library: one timing wheel for
// every lease, each lease a fixed-delay schedule on it.
type timerWatchdogs struct{ tm *timer.Timer }

func newTimerWatchdogs() (*timerWatchdogs, error) {
	tm, err := timer.New()
	if err != nil {
		return nil, err
	}
	return &timerWatchdogs{tm: tm}, nil
}

func (w *timerWatchdogs) Lock(period time.Duration, renew func()) Lease {
	p, err := w.tm.ScheduleWithFixedDelay(period, period, renew)
	if err != nil {
		panic(err) // a period that is not positive, or a closed timer: the caller's bug
	}
	return timerLease{p}
}

func (w *timerWatchdogs) Close() { w.tm.Close() }

type timerLease struct{ p *timer.Periodic }

// Unlock waits for a renewal in progress: Stop alone would let it finish
// after Unlock returned.
func (l timerLease) Unlock() { l.p.StopAndWait() }

// naiveWatchdogs is the watchdog without the library: a time.AfterFunc per
// lease that renews and re-arms itself.
type naiveWatchdogs struct{}

func (naiveWatchdogs) Lock(period time.Duration, renew func()) Lease {
	l := &naiveLease{period: period, renew: renew}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t = time.AfterFunc(period, l.run) // under mu: run, which takes mu, sees l.t
	return l
}

func (naiveWatchdogs) Close() {}

// naiveLease renews under its mutex, so that Unlock, which takes the
// mutex, waits for a renewal in progress, and a renewal that fires after
// Unlock finds the lease stopped.
type naiveLease struct {
	period time.Duration // immutable, as renew
	renew  func()

	mu      sync.Mutex // guards the following
	t       *time.Timer
	stopped bool
}

func (l *naiveLease) run() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return // fired as Unlock stopped it
	}
	l.renew()
	l.t.Reset(l.period) // fixed delay: measured from the end of this renewal
}

func (l *naiveLease) Unlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	l.t.Stop()
}
