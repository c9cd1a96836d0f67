package timer

import "time"

// A Clock tells the time and sleeps. Times are durations since the clock's
// own origin, read from a monotonic source, so wall-clock steps (NTP, a user
// changing the date) never move a deadline.
type Clock interface {
	// Now returns the time elapsed since the clock's origin.
	Now() time.Duration
	// NewAlarm returns an alarm that fires once d has elapsed.
	NewAlarm(d time.Duration) Alarm
}

// An Alarm is a one-shot wake-up, the clock-agnostic part of time.Timer.
type Alarm interface {
	// C is closed or sent on when the alarm fires.
	C() <-chan time.Time
	// Stop prevents the alarm from firing; it reports whether it did so.
	Stop() bool
}

// RealClock is the system's monotonic clock.
type RealClock struct{ origin time.Time }

// NewRealClock returns a RealClock whose origin is now.
func NewRealClock() *RealClock { return &RealClock{origin: time.Now()} }

// Now returns the monotonic time since the clock was made. About 25ns.
func (c *RealClock) Now() time.Duration { return time.Since(c.origin) }

// NewAlarm returns an alarm backed by a runtime timer.
func (c *RealClock) NewAlarm(d time.Duration) Alarm { return realAlarm{time.NewTimer(d)} }

type realAlarm struct{ t *time.Timer }

func (a realAlarm) C() <-chan time.Time { return a.t.C }
func (a realAlarm) Stop() bool          { return a.t.Stop() }
