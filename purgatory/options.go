package purgatory

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/reaper"
	"github.com/gopurgatory/purgatory/timer"
	"github.com/gopurgatory/purgatory/watchers"
)

// DefaultPurgeInterval is Kafka's default purge interval
// (fetch.purgatory.purge.interval.requests and its siblings).
const DefaultPurgeInterval = 1000

// An Option configures a Purgatory built by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	purgeInterval int
	shards        int
	timer         *timer.Timer // shared; nil: the purgatory makes its own
	timerOpts     []timer.Option
	clock         timer.Clock
	reaper        bool
	reaperWait    time.Duration
	logger        *zap.Logger // nil: none given; panics go to standard error
	registerer    prometheus.Registerer
}

func defaultConfig() config {
	return config{
		purgeInterval: DefaultPurgeInterval,
		shards:        watchers.DefaultShards,
		reaper:        true,
		reaperWait:    reaper.DefaultMaxWait,
	}
}

func (c *config) validate() error {
	if c.purgeInterval < 0 {
		return fmt.Errorf("%w: purge interval %d must not be negative", ErrInvalidConfig, c.purgeInterval)
	}
	if c.reaperWait <= 0 {
		c.reaperWait = reaper.DefaultMaxWait
	}
	if c.shards < 1 {
		return fmt.Errorf("%w: shard count %d must be at least 1", ErrInvalidConfig, c.shards)
	}
	if c.timer != nil && (c.clock != nil || len(c.timerOpts) > 0) {
		return fmt.Errorf("%w: WithTimer excludes WithClock and WithTimerOptions", ErrInvalidConfig)
	}
	return nil
}

// WithPurgeInterval bounds the watch entries of completed operations left in
// the watch lists (default 1000, Kafka's purge.interval.requests): past 2n,
// the reaper purges, and the entries never number more than three times n,
// or three sixteenths of the live entries when more than 16n are live (see
// the package documentation). A purge walks every list, so a small n costs
// CPU when many operations wait: about (watched entries)/2n entry visits,
// and never more than 9, per entry of a completed operation that no
// check dropped first.
//
// With n = 0 each operation leaves every list as it finishes (eager
// removal): nothing completed stays reachable, no purge is ever needed,
// and each operation pays two allocations (its record of its lists) and,
// when it finishes, a compaction of each of its keys' lists, O(their
// length); BENCHMARKS.md measures it. Choose it when completed operations
// are large (a fetch's response) and few wait per key.
func WithPurgeInterval(n int) Option { return optionFunc(func(c *config) { c.purgeInterval = n }) }

// WithShards sets the number of watcher shards (rounded up to a power of
// two; default watchers.DefaultShards).
func WithShards(n int) Option { return optionFunc(func(c *config) { c.shards = n }) }

// WithTimer makes the purgatory put its deadlines on tm, shared with other
// purgatories, instead of a timer of its own. tm's owner drives and closes
// it (a timer.New timer drives itself by default); the reaper then only
// purges.
func WithTimer(tm *timer.Timer) Option { return optionFunc(func(c *config) { c.timer = tm }) }

// WithTimerOptions passes options to the purgatory's own timer (tick, wheel
// size, workers, cap).
func WithTimerOptions(opts ...timer.Option) Option {
	return optionFunc(func(c *config) { c.timerOpts = append(c.timerOpts, opts...) })
}

// WithClock sets the clock of the purgatory's own timer. A *timer.ManualClock
// makes tests deterministic: expirations run inside ManualClock.Advance.
func WithClock(clk timer.Clock) Option { return optionFunc(func(c *config) { c.clock = clk }) }

// WithReaper turns the reaper goroutine on (the default) or off. Without it
// nothing advances the purgatory's own timer unless something calls
// AdvanceClock (or the clock is a ManualClock), and nothing purges.
func WithReaper(on bool) Option { return optionFunc(func(c *config) { c.reaper = on }) }

// WithReaperWait bounds each wait of the reaper (default 200ms, as Kafka).
func WithReaperWait(d time.Duration) Option { return optionFunc(func(c *config) { c.reaperWait = d }) }

// WithLogger sets the logger. Without one (or with nil) nothing is logged
// but the panics of callbacks, which are written to standard error with
// their stack, at most once a minute for each purgatory and callback, as
// net/http does for a handler's panic: a recovered panic is never silent.
// A logger given is used for them instead, so zap.NewNop() silences them:
// give no logger rather than a no-op one to keep a quiet default. Nothing
// on the hot path logs above debug level.
func WithLogger(l *zap.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }

// WithRegisterer registers the purgatory's metrics on r, labelled with the
// purgatory's name. Without it there are no metrics; the default registry is
// never used behind your back.
func WithRegisterer(r prometheus.Registerer) Option {
	return optionFunc(func(c *config) { c.registerer = r })
}
