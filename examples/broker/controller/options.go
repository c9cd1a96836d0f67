package controller

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/timer"
)

type config struct {
	session   time.Duration // broker.session.timeout.ms
	heartbeat time.Duration // broker.heartbeat.interval.ms: a live broker renews within it
	unclean   bool          // unclean.leader.election.enable, for topics without their own
	clusterID string        // proposed by the first controller, if the log has none
	rebalance rebalanceConfig
	log       *zap.Logger
	reg       prometheus.Registerer
	clock     timer.Clock
}

func defaultConfig() config {
	return config{session: 9 * time.Second, heartbeat: 2 * time.Second, log: zap.NewNop(),
		rebalance: rebalanceConfig{enable: true, interval: 300 * time.Second, pct: 10}}
}

func (c *config) validate() error {
	if c.session <= 0 || c.heartbeat <= 0 {
		return errors.New("controller: the session timeout and the heartbeat interval must be positive")
	}
	if c.rebalance.enable && (c.rebalance.interval <= 0 || c.rebalance.pct < 0 || c.rebalance.pct > 100) {
		return errors.New("controller: the leader imbalance check needs a positive interval and a percentage from 0 to 100")
	}
	return nil
}

// Option configures a Controller.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithSessionTimeout sets broker.session.timeout.ms (Kafka's 9s by
// default): a broker that does not heartbeat for this long is fenced.
func WithSessionTimeout(d time.Duration) Option { return optionFunc(func(c *config) { c.session = d }) }

// WithClusterID sets the cluster id a controller commits when the log has
// none yet (the first controller of a new cluster); random by default.
func WithClusterID(id string) Option { return optionFunc(func(c *config) { c.clusterID = id }) }

// WithLogger logs elections and fencing; no-op by default.
func WithLogger(l *zap.Logger) Option { return optionFunc(func(c *config) { c.log = l }) }

// WithRegisterer registers the session purgatory's metrics; none by
// default.
func WithRegisterer(r prometheus.Registerer) Option { return optionFunc(func(c *config) { c.reg = r }) }

// WithClock sets the sessions' clock; a *timer.ManualClock makes expiry
// deterministic in tests.
func WithClock(clk timer.Clock) Option { return optionFunc(func(c *config) { c.clock = clk }) }

// WithUncleanLeaderElection sets the cluster's unclean.leader.election.enable
// (false by default, as Kafka's): whether a partition whose ISR has no live
// replica is led by a live replica outside it, losing the records that
// replica lacks, rather than staying offline. A topic's own config of that
// name overrides it (metadata.UncleanElection).
func WithUncleanLeaderElection(on bool) Option { return optionFunc(func(c *config) { c.unclean = on }) }

// WithAutoLeaderRebalance sets auto.leader.rebalance.enable,
// leader.imbalance.check.interval.seconds and
// leader.imbalance.per.broker.percentage (Kafka's true, 300 s and 10 by
// default): every interval the active controller moves the leadership of
// a broker's partitions back to it, its preferred replica, where it is
// live and in sync, once it leads fewer than 100-pct percent of the
// partitions it prefers.
func WithAutoLeaderRebalance(enable bool, interval time.Duration, pct int) Option {
	return optionFunc(func(c *config) { c.rebalance = rebalanceConfig{enable: enable, interval: interval, pct: pct} })
}

// WithHeartbeatInterval sets broker.heartbeat.interval.ms (Kafka's 2s by
// default), how often a live broker renews its session: a new controller
// leaves the previous one at least two of them to renew.
func WithHeartbeatInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.heartbeat = d })
}
