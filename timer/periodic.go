package timer

import (
	"fmt"
	"sync"
	"time"
)

// Periodic runs a function repeatedly on a Timer until stopped, at a fixed
// rate or with a fixed delay, like the JDK's ScheduledExecutorService. It is
// one Task rescheduled after each run, so it costs what one pending task
// costs, and runs never overlap. Each run happens where the timer runs its
// tasks (a worker goroutine, or the goroutine that advances a timer without
// workers), so a run must not block.
//
// Stop and StopAndWait end the schedule: no run starts after either
// returns. A run already in progress finishes; StopAndWait waits for it, so
// that a lease watchdog stopped before its lock is released never renews
// the lock afterwards.
type Periodic struct {
	task      Task // runs (*periodicRun)(p)
	tm        *Timer
	fn        func()
	period    time.Duration
	fixedRate bool

	mu      sync.Mutex // guards the following
	idle    sync.Cond  // on mu: broadcast when a run ends
	next    time.Duration
	ended   bool  // no run starts any more: Stop, a panic, or the timer closing
	running bool  // fn is running
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
// run ends. As every deadline of the timer, each is rounded up to the next
// tick, and a run comes within a tick after it: with the default 1ms tick,
// a 1ms delay runs about every 2ms. A period that is not positive is
// refused with ErrInvalidConfig.
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
	p.idle.L = &p.mu
	p.task.Init((*periodicRun)(p))
	// p is not shared yet, and no lock may be held across ScheduleAt: a timer
	// without workers runs a due task inside it.
	p.next = satAdd(tm.Now(), initial)
	if err := tm.ScheduleAt(&p.task, p.next); err != nil {
		return nil, err
	}
	return p, nil
}

// periodicRun is the Periodic seen as its task's Runner: a conversion, and
// Run stays off Periodic's method set, where calling it would run f outside
// the schedule.
type periodicRun Periodic

// Run runs f, unless the schedule has ended, and schedules the next run.
// Deciding to start and marking the run in progress happen under p.mu, the
// lock Stop ends the schedule under: a run has started before Stop returned
// or never starts.
func (r *periodicRun) Run() {
	p := (*Periodic)(r)
	for {
		p.mu.Lock()
		if p.endedLocked() {
			p.mu.Unlock()
			return
		}
		p.running = true
		p.mu.Unlock()

		ok := p.runOnce()

		p.mu.Lock()
		p.running = false
		p.idle.Broadcast() // a StopAndWait waiting for this run
		if !ok || p.ended {
			p.mu.Unlock()
			return // it panicked, or was stopped meanwhile
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
		// Outside p.mu: without workers a due task runs inside ScheduleAt.
		err := p.tm.ScheduleAt(&p.task, next)
		p.mu.Lock()
		if err != nil {
			// The only failure is ErrClosed: a closed timer ends the schedule.
			p.ended, p.err = true, err
		} else if p.ended {
			// A Stop that ran since the check above found nothing to cancel.
			// Should the task run meanwhile, it finds the schedule ended.
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
		p.tm.reportPanic("timer: periodic task", v) // Err says its schedule ended
		p.mu.Lock()
		p.ended, p.err = true, fmt.Errorf("%w: %v", ErrPanicked, v)
		p.mu.Unlock()
	}()
	p.fn()
	return true
}

// endedLocked reports whether the schedule has ended. A timer that closed
// while the next run was pending dropped that run (Close returns pending
// tasks without running them): the schedule ended then, with ErrClosed.
//
// REQUIRES: p.mu held.
func (p *Periodic) endedLocked() bool {
	if !p.ended && p.tm.closed.Load() && !p.running {
		p.ended, p.err = true, ErrClosed
	}
	return p.ended
}

// Stop ends the schedule: no run starts after it returns. It reports
// whether this call ended it; false means it had ended already (Stop, a
// panic, the timer closing: see Err). A run in progress when Stop is
// called finishes; Stop does not wait for it (StopAndWait does), so Stop
// may be called from f itself. O(1).
func (p *Periodic) Stop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopLocked()
}

// StopAndWait ends the schedule as Stop does, then waits until a run in
// progress, if any, has returned: once it returns, f is not running and
// never runs again. It reports whether this call ended the schedule. It
// must not be called from f, whose own run it would wait for: call Stop
// there.
func (p *Periodic) StopAndWait() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	stopped := p.stopLocked()
	for p.running {
		p.idle.Wait()
	}
	return stopped
}

// REQUIRES: p.mu held.
func (p *Periodic) stopLocked() bool {
	if p.endedLocked() {
		return false
	}
	p.ended = true
	p.tm.Cancel(&p.task) // lock order: p.mu, then a shard's mu
	return true
}

// Err reports why the schedule ended by itself: ErrPanicked (wrapping the
// panic's value) after a run panicked, ErrClosed once the timer closed under
// it. It is nil while it runs and after Stop.
func (p *Periodic) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endedLocked()
	return p.err
}
