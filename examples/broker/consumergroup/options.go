package consumergroup

import (
	"fmt"
	"math"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/timer"
)

// Kafka's defaults.
const (
	DefaultSessionTimeout    = 45 * time.Second // group.consumer.session.timeout.ms
	DefaultHeartbeatInterval = 5 * time.Second  // group.consumer.heartbeat.interval.ms
	DefaultMaxSize           = math.MaxInt32    // group.consumer.max.size: no limit, in effect
)

// DefaultAssignors is group.consumer.assignors' default: uniform first,
// the one a member that names none gets.
var DefaultAssignors = []string{"uniform", "range"}

// Topics is the cluster's topics as the coordinator sees them (the broker's
// metadata image). Version changes whenever a topic is created, deleted or
// grows: the coordinator resolves its regular expressions and checks its
// groups' subscribed topics again only then.
type Topics interface {
	Version() uint64
	Topic(name string) (TopicMeta, bool)
	ByID(id TopicID) (TopicMeta, bool)
	// Names returns every topic's name, internal ones included (a
	// regular expression may match them, as in Kafka).
	Names() []string
}

// An Option configures a Coordinator built by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	clock     timer.Clock
	log       *zap.Logger
	session   time.Duration
	heartbeat time.Duration
	assignors []string
	maxSize   int // group.consumer.max.size
	topics    func() Topics
	owns      func(group string) bool // nil: every group
	onEmpty   func(group string)      // nil: nothing
	store     Store                   // nil: none, the groups live in memory alone
	// onClassicOnly is WithOnClassicOnly's hook; nil: nothing.
	onClassicOnly func(group string)
}

func defaultConfig() config {
	return config{log: zap.NewNop(), session: DefaultSessionTimeout, heartbeat: DefaultHeartbeatInterval,
		assignors: DefaultAssignors, maxSize: DefaultMaxSize}
}

func (c *config) validate() error {
	if c.topics == nil {
		return fmt.Errorf("consumergroup: no topics (WithTopics)")
	}
	if c.session <= 0 || c.heartbeat <= 0 || c.heartbeat >= c.session {
		return fmt.Errorf("consumergroup: heartbeat interval %v must be positive and below the session timeout %v", c.heartbeat, c.session)
	}
	if c.maxSize < 1 {
		return fmt.Errorf("consumergroup: group.consumer.max.size %d is below 1", c.maxSize)
	}
	if len(c.assignors) == 0 {
		return fmt.Errorf("consumergroup: no assignor")
	}
	known := Assignors()
	for _, a := range c.assignors {
		if known[a] == nil {
			return fmt.Errorf("consumergroup: unknown assignor %q (known: uniform, range)", a)
		}
	}
	return nil
}

// WithClock sets the clock of the session and rebalance timeouts (default:
// the system's monotonic clock). With a *timer.ManualClock they expire
// inside its Advance, so tests are deterministic.
func WithClock(clk timer.Clock) Option { return optionFunc(func(c *config) { c.clock = clk }) }

// WithLogger sets the logger (default: none).
func WithLogger(l *zap.Logger) Option { return optionFunc(func(c *config) { c.log = l }) }

// WithSessionTimeout sets group.consumer.session.timeout.ms: a member that
// does not heartbeat for that long is removed.
func WithSessionTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.session = d })
}

// WithHeartbeatInterval sets group.consumer.heartbeat.interval.ms, which
// every heartbeat's answer tells the member to keep to.
func WithHeartbeatInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.heartbeat = d })
}

// WithMaxSize sets group.consumer.max.size (default math.MaxInt32, at
// least 1): a group with that many members, classic ones included,
// answers GROUP_MAX_SIZE_REACHED to any other's heartbeat or JoinGroup
// (Kafka's throwIfConsumerGroupIsFull). The broker refuses to convert a
// larger classic group into a consumer group.
func WithMaxSize(n int) Option {
	return optionFunc(func(c *config) { c.maxSize = n })
}

// WithAssignors sets group.consumer.assignors: the names of the assignors
// members may ask for, the first the default.
func WithAssignors(names ...string) Option {
	return optionFunc(func(c *config) { c.assignors = slices.Clone(names) })
}

// WithTopics sets where the coordinator reads the cluster's topics from,
// called on each heartbeat (required).
func WithTopics(f func() Topics) Option { return optionFunc(func(c *config) { c.topics = f }) }

// WithOwner sets which groups the coordinator may create (in the broker,
// those of the offsets partitions it leads and has loaded): a join to
// another is answered NOT_COORDINATOR, so that a heartbeat racing the
// unload of its partition does not leave a group behind. Default: every
// group.
func WithOwner(owns func(group string) bool) Option {
	return optionFunc(func(c *config) { c.owns = owns })
}

// WithOnEmpty sets what is called, with no lock held, when a group is
// left without members: its last member left, its session expired or it
// was fenced, or a join that made the group failed. A member may join
// again before it runs: f asks the Coordinator (HasMembers, Delete)
// rather than trust the call. In the broker it starts the expiry of the
// group's offsets, and deletes the group if it has none, as Kafka deletes
// an Empty consumer group without offsets. Default: nothing, and an Empty
// group stays until Delete.
func WithOnEmpty(f func(group string)) Option {
	return optionFunc(func(c *config) { c.onEmpty = f })
}

// WithStore sets where the coordinator keeps its groups (store.go): every
// change of a group is appended to it, and a heartbeat answered once its
// change is durable. The broker's appends to __consumer_offsets, and a
// coordinator that takes the groups over loads them (Load). Default: none,
// and a group lives in this coordinator's memory alone.
func WithStore(s Store) Option { return optionFunc(func(c *config) { c.store = s }) }

// WithOnClassicOnly sets what is called, with no lock held, when a
// timeout (a session, a rebalance timeout) removes a group's last member
// of the consumer protocol and leaves it classic members alone: the
// broker's converts it back to a classic group (ToClassic), as Kafka's
// online downgrade does when it fences the last such member. A leave
// that does so is the caller's to see (ToClassic after the heartbeat).
// Default: nothing, and the group stays a consumer group of classic
// members.
func WithOnClassicOnly(f func(group string)) Option {
	return optionFunc(func(c *config) { c.onClassicOnly = f })
}
