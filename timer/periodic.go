package timer

import (
	"sync"
	"time"
)

// Periodic runs a function repeatedly on a Timer until stopped, at a fixed
// rate or with a fixed delay, like the JDK's ScheduledExecutorService. It is
// one Task rescheduled after each run, so it costs what one pending task
// costs, and runs never overlap.
type Periodic struct {
	task      Task
	tm        *Timer
	fn        func()
	period    time.Duration
	fixedRate bool

	mu      sync.Mutex // guards the following
	next    time.Duration
	stopped bool
}

// ScheduleAtFixedRate runs f first after initial, then every period measured
// from the previous deadline: run n is due at initial + n×period whatever the
// runs cost. A run that is late does not shift later ones, so after a stall
// the missed runs follow each other at once, as with the JDK. If f panics,
// the panic is logged and later runs are suppressed.
func (tm *Timer) ScheduleAtFixedRate(initial, period time.Duration, f func()) (*Periodic, error) {
	return tm.periodic(initial, period, true, f)
}

// ScheduleWithFixedDelay runs f first after initial, then period after each
// run ends. If f panics, the panic is logged and later runs are suppressed.
func (tm *Timer) ScheduleWithFixedDelay(initial, period time.Duration, f func()) (*Periodic, error) {
	return tm.periodic(initial, period, false, f)
}

func (tm *Timer) periodic(initial, period time.Duration, fixedRate bool, f func()) (*Periodic, error) {
	if period <= 0 {
		panic("timer: a periodic task needs a positive period")
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
		p.fn() // a panic skips the rescheduling below: later runs are suppressed

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
		// The only failure is ErrClosed: a closed timer ends the schedule.
		_ = p.tm.ScheduleAt(&p.task, next)
		// A Stop that ran since the check above found nothing to cancel.
		p.mu.Lock()
		if p.stopped {
			p.tm.Cancel(&p.task)
		}
		p.mu.Unlock()
		return
	}
}

// Stop ends the schedule and reports whether it stopped a pending run. It
// does not wait for a run in progress, which will not be followed by another.
func (p *Periodic) Stop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	return p.tm.Cancel(&p.task)
}
