package server

// Replication throttles (KIP-73): the rates of the two replication quotas
// every broker keeps (package quota's Replication, Kafka's
// ReplicationQuotaManager), set by the dynamic broker configs
// leader.replication.throttled.rate and follower.replication.throttled.rate
// (this broker's own, else the cluster default, else Long.MAX_VALUE:
// unthrottled), and applied by package replica to the replicas the topic
// configs leader.replication.throttled.replicas and
// follower.replication.throttled.replicas name for this broker. The rates
// are measured over Kafka's replication.quota.window.num (11) windows of
// replication.quota.window.size.seconds (1), which this broker does not
// make settable.

import (
	"math"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
)

// The replication throttles' rates, as Kafka's QuotaConfig names them.
const (
	leaderThrottleRate   = "leader.replication.throttled.rate"
	followerThrottleRate = "follower.replication.throttled.rate"
)

// throttleRates are the dynamic broker configs of the replication
// throttles, which no topic config is the default of.
var throttleRates = map[string]bool{leaderThrottleRate: true, followerThrottleRate: true}

// unthrottled is the rates' default, Kafka's QUOTA_BYTES_PER_SECOND_DEFAULT.
const unthrottled = math.MaxInt64

// replicationQuotas are the broker's two replication quotas: what it sends
// as a leader, what it fetches as a follower.
type replicationQuotas struct {
	leader, follower *quota.Replication
}

func newReplicationQuotas() (replicationQuotas, error) {
	leader, err := quota.NewReplication()
	if err != nil {
		return replicationQuotas{}, err
	}
	follower, err := quota.NewReplication()
	if err != nil {
		return replicationQuotas{}, err
	}
	return replicationQuotas{leader: leader, follower: follower}, nil
}

// parseThrottleRate reads a rate as Kafka's ConfigDef reads a LONG at
// least 0, with its messages.
func parseThrottleRate(name, v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	switch {
	case err != nil:
		return 0, kafkaErrorf(errBrokerConfig, "Invalid value %s for configuration %s: Not a number of type LONG", v, name)
	case n < 0:
		return 0, kafkaErrorf(errBrokerConfig, "Invalid value %s for configuration %s: Value must be at least 0", v, name)
	}
	return n, nil
}

// throttleRate returns rate name on this broker under im: its own value,
// else the cluster default's, else unthrottled. A value the log holds
// that does not parse (the controller checked it) is unthrottled, and
// logged.
func (s *Server) throttleRate(im *metadata.Image, name string) int64 {
	v, _, ok := im.BrokerConfig(s.cfg.NodeID, name)
	if !ok {
		return unthrottled
	}
	n, err := parseThrottleRate(name, v)
	if err != nil {
		s.log.Warn("a replication throttle of the metadata log is left unthrottled", zap.String("config", name), zap.Error(err))
		return unthrottled
	}
	return n
}

// followThrottleRates sets the replication quotas' limits to im's rates,
// from now on (Kafka's BrokerConfigHandler updating its quota managers).
func (s *Server) followThrottleRates(im *metadata.Image) {
	s.replQuotas.leader.SetLimit(s.throttleRate(im, leaderThrottleRate))
	s.replQuotas.follower.SetLimit(s.throttleRate(im, followerThrottleRate))
}
