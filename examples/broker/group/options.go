package group

import (
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/timer"
)

// Kafka's defaults.
const (
	DefaultInitialRebalanceDelay = 3 * time.Second    // group.initial.rebalance.delay.ms
	DefaultMinSessionTimeout     = 6 * time.Second    // group.min.session.timeout.ms
	DefaultMaxSessionTimeout     = 30 * time.Minute   // group.max.session.timeout.ms
	DefaultOffsetsRetention      = 7 * 24 * time.Hour // offsets.retention.minutes
	DefaultMaxMetadataSize       = 4096               // offset.metadata.max.bytes
	DefaultEmptyGroupRetention   = 10 * time.Minute   // offsets.retention.check.interval.ms
	DefaultMaxSize               = math.MaxInt32      // group.max.size: no limit, in effect
	newMemberJoinTimeout         = 5 * time.Minute    // Kafka's NewMemberJoinTimeoutMs
	joinAnswerSlack              = 5 * time.Second    // see joinWait
	forever                      = time.Duration(-1)  // a retention that never ends
	maxDuration                  = time.Duration(1<<63 - 1)
)

// An Option configures a Coordinator built by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	clock         timer.Clock
	log           *zap.Logger
	reg           prometheus.Registerer
	initialDelay  time.Duration
	minSession    time.Duration
	maxSession    time.Duration
	retention     time.Duration // < 0: forever
	emptyGrace    time.Duration
	maxMetadata   int
	maxSize       int // group.max.size
	purgeInterval int
	subscriptions func(metadata []byte) ([]string, error)
	store         OffsetStore             // nil: offsets live in memory
	wall          func() time.Time        // wall clock, for the times a store keeps
	owns          func(group string) bool // nil: every group
	held          func(group string) bool // nil: none (held.go)
	onExpired     func(group string)      // nil: none (held.go)
}

func defaultConfig() config {
	return config{
		log:           zap.NewNop(),
		initialDelay:  DefaultInitialRebalanceDelay,
		minSession:    DefaultMinSessionTimeout,
		maxSession:    DefaultMaxSessionTimeout,
		retention:     DefaultOffsetsRetention,
		emptyGrace:    DefaultEmptyGroupRetention,
		maxMetadata:   DefaultMaxMetadataSize,
		maxSize:       DefaultMaxSize,
		purgeInterval: 1000,
		wall:          time.Now,
	}
}

func (c *config) validate() error {
	switch {
	case c.initialDelay < 0:
		return fmt.Errorf("%w: initial rebalance delay %v is negative", ErrInvalidConfig, c.initialDelay)
	case c.minSession < 0 || c.minSession > c.maxSession:
		return fmt.Errorf("%w: session timeout bounds [%v, %v]", ErrInvalidConfig, c.minSession, c.maxSession)
	case c.emptyGrace < 0:
		return fmt.Errorf("%w: empty group retention %v is negative", ErrInvalidConfig, c.emptyGrace)
	case c.maxMetadata < 0:
		return fmt.Errorf("%w: offset metadata limit %d is negative", ErrInvalidConfig, c.maxMetadata)
	case c.maxSize < 1:
		return fmt.Errorf("%w: group.max.size %d is below 1", ErrInvalidConfig, c.maxSize)
	case c.purgeInterval < 0:
		return fmt.Errorf("%w: purge interval %d", ErrInvalidConfig, c.purgeInterval)
	case c.wall == nil:
		return fmt.Errorf("%w: nil wall clock", ErrInvalidConfig)
	}
	if c.retention < 0 {
		c.retention = forever
	}
	return nil
}

// WithClock sets the clock of the coordinator's purgatories and of its
// timestamps (default: the system's monotonic clock). With a
// *timer.ManualClock, every session, rebalance and retention deadline
// expires inside ManualClock.Advance, on the goroutine advancing it.
func WithClock(clk timer.Clock) Option { return optionFunc(func(c *config) { c.clock = clk }) }

// WithLogger sets the logger (default: no-op). Rebalances and expulsions
// are logged at info level, as Kafka logs them.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.log = l
		}
	})
}

// WithRegisterer registers the purgatories' metrics on r, labelled
// purgatory="Rebalance", "Heartbeat" and "OffsetExpiration". Without it
// there are no metrics.
func WithRegisterer(r prometheus.Registerer) Option {
	return optionFunc(func(c *config) { c.reg = r })
}

// WithInitialRebalanceDelay sets how long the first rebalance of an Empty
// group waits for more members, extended by as much each time one joins,
// up to the rebalance timeout (group.initial.rebalance.delay.ms, default
// 3s; Kafka's InitialDelayedJoin).
func WithInitialRebalanceDelay(d time.Duration) Option {
	return optionFunc(func(c *config) { c.initialDelay = d })
}

// WithSessionTimeouts sets the session timeouts a member may ask for
// (group.min.session.timeout.ms and group.max.session.timeout.ms, default
// 6s and 30m); a JoinGroup outside them gets INVALID_SESSION_TIMEOUT.
func WithSessionTimeouts(min, max time.Duration) Option {
	return optionFunc(func(c *config) { c.minSession, c.maxSession = min, max })
}

// WithOffsetsRetention sets how long an Empty group keeps its committed
// offsets (offsets.retention.minutes, default 7 days; negative: forever).
// The count starts when the group became Empty; for a group that never had
// members (a simple consumer's offsets) it starts at each commit.
func WithOffsetsRetention(d time.Duration) Option {
	return optionFunc(func(c *config) { c.retention = d })
}

// WithEmptyGroupRetention sets how long an Empty group with no committed
// offsets is kept before it is deleted (default 10m, the longest Kafka
// keeps one: offsets.retention.check.interval.ms).
func WithEmptyGroupRetention(d time.Duration) Option {
	return optionFunc(func(c *config) { c.emptyGrace = d })
}

// WithMaxMetadataSize sets the largest metadata an offset commit may carry
// (offset.metadata.max.bytes, default 4096); a larger one gets
// OFFSET_METADATA_TOO_LARGE.
func WithMaxMetadataSize(n int) Option {
	return optionFunc(func(c *config) { c.maxMetadata = n })
}

// WithMaxSize sets the most members a group may have (group.max.size,
// default math.MaxInt32, at least 1): a JoinGroup that would add one more
// is answered GROUP_MAX_SIZE_REACHED (join.go's acceptJoining). A group
// loaded with more (the limit was lowered) rebalances at once, and keeps
// the first members to rejoin, as Kafka's does.
func WithMaxSize(n int) Option {
	return optionFunc(func(c *config) { c.maxSize = n })
}

// WithPurgeInterval sets the purge interval of the coordinator's
// purgatories (default 1000, Kafka's; 0: completed operations leave their
// lists as they complete, see purgatory.WithPurgeInterval).
func WithPurgeInterval(n int) Option {
	return optionFunc(func(c *config) { c.purgeInterval = n })
}

// WithSubscriptions tells the coordinator how to read the topics a member
// of a "consumer" group subscribes to from its protocol metadata, so that
// DeleteOffsets can refuse offsets still consumed
// (GROUP_SUBSCRIBED_TO_TOPIC) instead of refusing every offset of a group
// with members (NON_EMPTY_GROUP). The server passes kmsg's decoder; the
// coordinator itself stays protocol-agnostic.
func WithSubscriptions(decode func(metadata []byte) ([]string, error)) Option {
	return optionFunc(func(c *config) { c.subscriptions = decode })
}

// WithOffsetStore makes committed offsets outlive the coordinator: every
// commit, deletion and expiry is recorded in s before it takes effect,
// and a commit is answered once s says it is durable (see OffsetStore);
// Load brings back the groups s holds. Without it, offsets live in memory
// and die with the coordinator.
func WithOffsetStore(s OffsetStore) Option { return optionFunc(func(c *config) { c.store = s }) }

// WithWallClock sets the wall clock that the times given to an
// OffsetStore are read from (default: time.Now). It is read once, by New:
// later times are the coordinator's clock's, counted from then.
func WithWallClock(now func() time.Time) Option { return optionFunc(func(c *config) { c.wall = now }) }

// WithHeld sets which groups another protocol holds (in the broker, the
// KIP-848 consumer groups with members, whose offsets this coordinator
// keeps in an Empty group of their id): a held group's offsets do not
// expire, nor is it deleted for want of them, until Release (held.go).
// held is called with a group's mutex held: it must not call back into
// the Coordinator. Default: none is.
func WithHeld(held func(group string) bool) Option {
	return optionFunc(func(c *config) { c.held = held })
}

// WithOnExpired sets what is called, with no lock held, after an Empty
// group is deleted because its offsets all expired (not by DeleteGroups):
// in the broker, the KIP-848 consumer group of its id, Empty, goes with
// it. Default: nothing.
func WithOnExpired(f func(group string)) Option {
	return optionFunc(func(c *config) { c.onExpired = f })
}
