package timer

import (
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Periodic runs a function repeatedly on a Timer until stopped, at a fixed
// rate or with a fixed delay, like the JDK's ScheduledExecutorService. It is
// one Task rescheduled after each run, so it costs what one pending task
// costs, and runs never overlap. Each run happens where the timer runs its
// tasks (a worker goroutine, or the goroutine that advances a timer without
// workers), so a run must not block.
type Periodic struct {
	task      Task
	tm        *Timer
	fn        func()
	period    time.Duration
	fixedRate bool

	mu      sync.Mutex // guards the following
	next    time.Duration
	stopped bool
	err     error // why the schedule ended by itself: a panic, or the timer closing
}

// ScheduleAtFixedRate runs f first after initial, then every period measured
// from the previous deadline: run n is due at initial + n×period whatever the
// runs cost. A run that is late does not shift later ones, so after a stall
// the missed runs follow each other at once, as with the JDK. A period that
// is not positive is refused with ErrInvalidConfig. If f panics, the panic
// is recovered, logged and counted in Stats.Panics, and the schedule ends
// (Err says why), as a JDK periodic task that throws ends.
func (tm *Timer) ScheduleAtFixedRate(initial, period time.Duration, f func()) (*Periodic, error) {
	return tm.periodic(initial, period, true, f)
}

// ScheduleWithFixedDelay runs f first after initial, then period after each
// run ends. A period that is not positive is refused with ErrInvalidConfig.
// If f panics, the panic is recovered, logged and counted in Stats.Panics,
// and the schedule ends (Err says why).
func (tm *Timer) ScheduleWithFixedDelay(initial, period time.Duration, f func()) (*Periodic, error) {
	return tm.periodic(initial, period, false, f)
}

func (tm *Timer) periodic(initial, period time.Duration, fixedRate bool, f func()) (*Periodic, error) {
	if period <= 0 {
		return nil, fmt.Errorf("%w: a periodic task's period %v must be positive", ErrInvalidConfig, period)
	}
	p := &Periodic{tm: tm, fn: f, period: period, fixedRate: fixedRate}
	p.task.Init(p)
	// p is not shared yet, and no lock may be held across ScheduleAt: a timer
	// without workers runs a due task inside it.
	p.next = satAdd(tm.Now(), initial)
	if err := tm.ScheduleAt(&p.task, p.next); err != nil {
		return nil, err
	}
	return p, nil
}

// Run is called by the timer; it runs f and schedules the next run.
func (p *Periodic) Run() {
	for {
		p.mu.Lock()
		stopped := p.stopped
		p.mu.Unlock()
		if stopped {
			return
		}
		if !p.runOnce() {
			return // it panicked: the schedule has ended
		}

		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		now := p.tm.Now()
		if p.fixedRate {
			p.next = satAdd(p.next, p.period)
		} else {
			p.next = satAdd(now, p.period)
		}
		next := p.next
		p.mu.Unlock()
		if next <= now {
			continue // a fixed rate catching up: run again now, without recursing
		}
		err := p.tm.ScheduleAt(&p.task, next)
		p.mu.Lock()
		if err != nil {
			// The only failure is ErrClosed: a closed timer ends the schedule.
			p.stopped, p.err = true, err
		} else if p.stopped {
			// A Stop that ran since the check above found nothing to cancel.
			p.tm.Cancel(&p.task)
		}
		p.mu.Unlock()
		return
	}
}

// runOnce runs f, and reports false if it panicked: the panic is logged,
// counted, and ends the schedule.
func (p *Periodic) runOnce() (ok bool) {
	defer func() {
		if ok {
			return
		}
		v := recover()
		p.tm.panics.Add(1)
		p.tm.log.Error("timer: periodic task panicked; it will not run again",
			zap.Any("panic", v), zap.Stack("stack"))
		p.mu.Lock()
		p.stopped, p.err = true, fmt.Errorf("%w: %v", ErrPanicked, v)
		p.mu.Unlock()
	}()
	p.fn()
	return true
}

// Stop ends the schedule and reports whether it stopped a pending run. It
// does not wait for a run in progress, which will not be followed by another.
// It returns false for a schedule that ended by itself (see Err).
func (p *Periodic) Stop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	return p.tm.Cancel(&p.task)
}

// Err reports why the schedule ended by itself: ErrPanicked (wrapping the
// panic's value) after a run panicked, ErrClosed once the timer closed under
// it. It is nil while it runs and after Stop.
func (p *Periodic) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
