package timer

import (
	"fmt"
	"math/bits"
	"runtime"
	"time"

	"go.uber.org/zap"
)

// Defaults, as in Apache Kafka's SystemTimer.
const (
	DefaultTick      = time.Millisecond
	DefaultWheelSize = 20
)

// An Option configures a Timer built by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	tick        time.Duration
	size        int
	clock       Clock
	logger      *zap.Logger // nil: none given, panics go to standard error
	workers     int         // -1: decide from the clock
	autoAdvance int         // -1: decide from the clock, 0 no, 1 yes
	maxPending  int64
	shards      int // 0: defaultShards
}

func defaultConfig() config {
	return config{
		tick:        DefaultTick,
		size:        DefaultWheelSize,
		workers:     -1,
		autoAdvance: -1,
	}
}

// validate fills the clock-dependent defaults and checks ranges.
func (c *config) validate() error {
	if c.tick <= 0 {
		return fmt.Errorf("%w: tick %v must be positive", ErrInvalidConfig, c.tick)
	}
	if c.size < 2 {
		return fmt.Errorf("%w: wheel size %d must be at least 2", ErrInvalidConfig, c.size)
	}
	if c.shards < 0 || c.shards > 1<<16 {
		return fmt.Errorf("%w: shards %d must be between 0 and 65536", ErrInvalidConfig, c.shards)
	}
	if c.shards == 0 {
		c.shards = defaultShards()
	}
	c.shards = 1 << bits.Len(uint(c.shards-1))
	if c.maxPending < 0 {
		return fmt.Errorf("%w: max pending %d must not be negative", ErrInvalidConfig, c.maxPending)
	}
	_, manual := c.clock.(*ManualClock)
	if c.clock == nil {
		c.clock = NewRealClock()
	}
	if c.workers < 0 {
		// A manual clock runs due tasks synchronously, in the goroutine that
		// advances it, so that tests are deterministic.
		c.workers = runtime.GOMAXPROCS(0)
		if manual {
			c.workers = 0
		}
	}
	if c.autoAdvance < 0 {
		c.autoAdvance = 1
		if manual {
			c.autoAdvance = 0
		}
	}
	return nil
}

// WithTick sets the resolution of the lowest level (default 1ms). A task never
// runs before its deadline and, on an idle machine, within one tick after it.
func WithTick(d time.Duration) Option { return optionFunc(func(c *config) { c.tick = d }) }

// WithWheelSize sets the number of buckets per level (default 20).
func WithWheelSize(n int) Option { return optionFunc(func(c *config) { c.size = n }) }

// WithClock sets the clock (default: a RealClock). With a *ManualClock the
// timer starts no goroutine and due tasks run synchronously inside
// ManualClock.Advance, unless WithWorkers or WithAutoAdvance say otherwise.
func WithClock(clk Clock) Option { return optionFunc(func(c *config) { c.clock = clk }) }

// WithLogger sets the logger that reports recovered panics. Without one (or
// with nil), a recovered panic is written to standard error with its stack,
// at most once a minute for each kind of task, as net/http does for a
// handler's panic: never silently. A logger given is used instead, so
// zap.NewNop() silences them.
func WithLogger(l *zap.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }

// WithWorkers sets how many goroutines run expired tasks (default
// GOMAXPROCS; 0 with a ManualClock). Zero runs each task on the goroutine
// that advances the clock, which suits short tasks and tests.
func WithWorkers(n int) Option {
	return optionFunc(func(c *config) {
		if n < 0 {
			n = 0
		}
		c.workers = n
	})
}

// WithAutoAdvance says whether the timer owns a goroutine that advances its
// clock (default true, false with a ManualClock). Turn it off when something
// else, such as a purgatory's reaper, calls AdvanceClock.
func WithAutoAdvance(on bool) Option {
	return optionFunc(func(c *config) {
		c.autoAdvance = 0
		if on {
			c.autoAdvance = 1
		}
	})
}

// WithMaxPending caps the number of pending tasks; scheduling past the cap
// fails with ErrFull. Zero, the default, means no cap.
func WithMaxPending(n int64) Option { return optionFunc(func(c *config) { c.maxPending = n }) }

// WithShards sets how many wheels the timer splits its tasks over, each with
// its own lock, rounded up to a power of two (default: four per core, at
// most 64). A task's wheel is picked from its address, so tasks scheduled
// and cancelled on different cores seldom wait for each other; one wheel
// is the plain timing wheel of the package documentation. The advancing
// goroutine visits every wheel, so more shards cost it a little more.
func WithShards(n int) Option { return optionFunc(func(c *config) { c.shards = n }) }
