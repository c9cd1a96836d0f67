package server

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// noLeaderHint is Kafka's current_leader of "no hint": leader and epoch -1.
const noLeaderHint int32 = -1

// leaderHint is the current_leader that a share partition's error answer
// carries (KIP-951, as Kafka's ShareFetch and ShareAcknowledge answers
// carry it): for NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH, the
// partition's leader and leader epoch in the image, with the leader's
// endpoint on r's listener, which the caller adds to the answer's node
// endpoints (ok); for any other code, a leader unknown or this broker, -1
// and -1, which clients read as no hint. Left at its zero value it named
// broker 0 at epoch 0, and kgo moved the partition's share cursor to a
// broker that does not exist, where its records stalled.
func (s *Server) leaderHint(r *kafkanet.Request, tp shareTP, code int16) (leader, epoch int32, ep describedBroker, ok bool) {
	if code != kerr.NotLeaderForPartition.Code && code != kerr.FencedLeaderEpoch.Code {
		return noLeaderHint, noLeaderHint, ep, false
	}
	t, err := s.image().TopicByID(metadata.TopicID(tp.topic))
	if err != nil || tp.partition < 0 || int(tp.partition) >= len(t.Partitions) {
		return noLeaderHint, noLeaderHint, ep, false
	}
	p := t.Partitions[tp.partition]
	if p.Offline() || p.Leader == s.cfg.NodeID {
		return noLeaderHint, noLeaderHint, ep, false
	}
	n, known := s.brokers.Node(p.Leader)
	if !known {
		return noLeaderHint, noLeaderHint, ep, false
	}
	host, port, reachable := s.endpoint(r, n)
	if !reachable {
		return noLeaderHint, noLeaderHint, ep, false
	}
	return p.Leader, p.LeaderEpoch, describedBroker{id: p.Leader, host: host, port: port}, true
}
