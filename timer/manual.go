package timer

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ManualClock is a clock that moves only when told to, for deterministic
// tests (Kafka's MockTime and MockTimer in one). Every Timer built on it is
// advanced synchronously: when Advance returns, every task due by the new time
// has run, in deadline order, and each saw Now() equal to the tick its bucket
// expired at. Tasks that a running task schedules within the advanced span run
// too, at their own time.
//
// Lock order: advanceMu, then mu, then a Timer's locks; mu is never held while
// a Timer advances or a task runs.
type ManualClock struct {
	now atomic.Int64 // nanoseconds since origin; written under mu

	advanceMu sync.Mutex // serialises Advance

	mu     sync.Mutex // guards the following
	alarms []*manualAlarm
	timers []*Timer
}

// NewManualClock returns a manual clock reading start.
func NewManualClock(start time.Duration) *ManualClock {
	c := &ManualClock{}
	c.now.Store(int64(start))
	return c
}

// Now returns the clock's current reading.
func (c *ManualClock) Now() time.Duration { return time.Duration(c.now.Load()) }

// NewAlarm returns an alarm that fires when the clock has been advanced by d.
func (c *ManualClock) NewAlarm(d time.Duration) Alarm {
	a := &manualAlarm{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	a.at = satAdd(time.Duration(c.now.Load()), d)
	if a.at <= time.Duration(c.now.Load()) {
		a.ch <- time.Time{}
		return a
	}
	c.alarms = append(c.alarms, a)
	return a
}

// Advance moves the clock forward by d (negative d is treated as zero),
// stopping at every bucket expiry on the way to run what is due. It must not
// be called from a task running on this clock.
func (c *ManualClock) Advance(d time.Duration) {
	if d < 0 {
		d = 0
	}
	c.advanceMu.Lock()
	defer c.advanceMu.Unlock()
	target := satAdd(c.Now(), d)
	for {
		c.mu.Lock()
		timers := append([]*Timer(nil), c.timers...)
		c.mu.Unlock()

		// Step to the earliest expiry among the attached timers, so that
		// tasks run at their own time and in deadline order across timers.
		step := target
		for _, tm := range timers {
			if at, ok := tm.nextExpiry(); ok && at < step {
				step = at
			}
		}
		c.set(step)
		for _, tm := range timers {
			tm.advance(step, false, nil)
		}
		if step >= target {
			return
		}
	}
}

// set moves the clock to t (never backwards) and fires the alarms due.
func (c *ManualClock) set(t time.Duration) {
	c.mu.Lock()
	if t > time.Duration(c.now.Load()) {
		c.now.Store(int64(t))
	}
	live := c.alarms[:0]
	var fire []*manualAlarm
	for _, a := range c.alarms {
		if a.at <= t {
			fire = append(fire, a)
		} else {
			live = append(live, a)
		}
	}
	clear(c.alarms[len(live):])
	c.alarms = live
	c.mu.Unlock()
	for _, a := range fire {
		a.ch <- time.Time{} // buffered, and each alarm fires once
	}
}

func (c *ManualClock) attach(tm *Timer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timers = append(c.timers, tm)
}

func (c *ManualClock) detach(tm *Timer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.timers {
		if x == tm {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return
		}
	}
}

type manualAlarm struct {
	c  *ManualClock
	at time.Duration
	ch chan time.Time
}

func (a *manualAlarm) C() <-chan time.Time { return a.ch }

func (a *manualAlarm) Stop() bool {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	for i, x := range a.c.alarms {
		if x == a {
			a.c.alarms = append(a.c.alarms[:i], a.c.alarms[i+1:]...)
			return true
		}
	}
	return false
}

// satAdd returns a+b, saturated at the int64 range, for deadlines that are
// days or centuries away.
func satAdd(a, b time.Duration) time.Duration {
	s := a + b
	if b > 0 && s < a {
		return math.MaxInt64
	}
	if b < 0 && s > a {
		return math.MinInt64
	}
	return s
}
