// Package clocktest is a wall clock for the broker's tests that moves only
// when told to: what storage.WithClock and logdir's options take, so that
// retention, segment rolls and producer expiry are tested without sleeping.
package clocktest

import (
	"sync"
	"time"
)

// Manual is a wall clock that moves only when told to. Safe for
// concurrent use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock at a fixed instant in November 2023, so that record
// timestamps in tests are recent and repeatable.
func New() *Manual { return &Manual{now: time.UnixMilli(1_700_000_000_000)} }

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
