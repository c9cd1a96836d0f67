package server

// OffsetForLeaderEpoch: v0-v4.
//
// Answers, per partition, where a leader epoch ends in the leader's log
// (KIP-101): the largest epoch at or below the one asked that the
// partition's leader-epoch cache knows, and the start offset of the next
// larger epoch, or the log end when the epoch asked is the latest
// (storage.Partition.EndOffsetForEpoch, Kafka's endOffsetFor). A follower
// truncates to it before fetching (replica.Fetcher, KIP-101 and
// KIP-279); a consumer validates its position with it after a leader
// change and detects truncation (KIP-320). An epoch the cache cannot
// place answers leader epoch -1, end offset -1.
//
// current_leader_epoch (v2+) is checked as Fetch and ListOffsets check it
// (-1: no check; older than the partition's: FENCED_LEADER_EPOCH; newer:
// UNKNOWN_LEADER_EPOCH). Only the leader answers (NOT_LEADER_OR_FOLLOWER
// elsewhere), for consumers (replica_id -1, and every request before v3)
// and followers alike, as Kafka; a debugging replica id (-2) is answered
// by any replica. A topic or partition this broker lacks is
// UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization (authz.go), as Kafka since KIP-320: CLUSTER_ACTION on the
// cluster (a follower), else DESCRIBE on each topic (a consumer); a topic
// refused is TOPIC_AUTHORIZATION_FAILED for each of its partitions.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.OffsetForLeaderEpoch, 0, 4, (*Server).handleOffsetForLeaderEpoch) }

// debuggingReplicaID is the replica id of a tool that may read any
// replica (Kafka's ListOffsetsRequest.DEBUGGING_REPLICA_ID).
const debuggingReplicaID = -2

func (s *Server) handleOffsetForLeaderEpoch(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	c := s.access(r)
	follower := c.Sees(opClusterAction, clusterRes, acl.ClusterName)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		var denied int16
		if !follower {
			denied = c.TopicCode(opDescribe, rt.Topic)
		}
		topic, terr := s.replicas.Store().Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = storage.UndefinedEpoch, storage.UndefinedEpochOffset
			switch {
			case denied != 0:
				sp.ErrorCode = denied
			case terr != nil:
				sp.ErrorCode = errorCode(terr)
			default:
				sp.ErrorCode = s.endOffsetForEpoch(topic, req.ReplicaID, rp, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	r.Respond(resp)
}

// endOffsetForEpoch answers one partition into sp and returns its error
// code.
func (s *Server) endOffsetForEpoch(topic *storage.Topic, replicaID int32, rp kmsg.OffsetForLeaderEpochRequestTopicPartition,
	sp *kmsg.OffsetForLeaderEpochResponseTopicPartition) int16 {
	p, err := topic.Partition(rp.Partition)
	if err != nil {
		return errorCode(err)
	}
	leader := replicaID != debuggingReplicaID
	if leader {
		if err := s.replicas.Leads(p); err != nil {
			return errorCode(err)
		}
	}
	if code := replica.EpochErrorCode(rp.CurrentLeaderEpoch, p.LeaderEpoch()); code != 0 {
		return code
	}
	epoch, end, err := p.EndOffsetForEpoch(rp.LeaderEpoch)
	if err != nil {
		return errorCode(err)
	}
	sp.LeaderEpoch, sp.EndOffset = epoch, end
	return 0
}
