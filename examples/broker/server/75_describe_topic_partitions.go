package server

// DescribeTopicPartitions: v0.
//
// KIP-966's paginated describe, which Kafka 4's admin client and
// kafka-topics.sh use in place of Metadata: the topics named, or every
// topic when none is, in name order, each with its id, whether it is
// internal, its authorized operations (KIP-430) and its partitions as
// Metadata gives them (replicas, leader, leader epoch, ISR, offline
// replicas; an offline partition LEADER_NOT_AVAILABLE). At most
// response_partition_limit partitions are answered (at least 1, at most
// max.request.partition.size.limit, 2000); the answer then carries the
// cursor where the next request starts: the topic, and the partition in
// it. A request's cursor starts the answer at its topic and partition;
// with named topics the cursor's topic must be among them, and its
// partition not negative (INVALID_REQUEST otherwise). A named topic that
// does not exist is UNKNOWN_TOPIC_OR_PARTITION, with a zero id.
//
// Authorization (authz.go): DESCRIBE on each topic; a named topic the
// client may not describe is TOPIC_AUTHORIZATION_FAILED, with a zero id,
// whether it exists or not, and left out of an answer for every topic.
//
// Not implemented: eligible leader replicas (KIP-966's ELR; the lists are
// empty, as Kafka's without eligible.leader.replicas.enable).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() {
	serve(kmsg.DescribeTopicPartitions, 0, 0, (*Server).handleDescribeTopicPartitions)
}

// maxRequestPartitionSizeLimit is Kafka's
// max.request.partition.size.limit: the most partitions one
// DescribeTopicPartitions answer holds.
const maxRequestPartitionSizeLimit = 2000

func (s *Server) handleDescribeTopicPartitions(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	im := s.image()
	c := s.access(r)
	all := len(req.Topics) == 0
	from, start := "", int32(0)
	if cur := req.Cursor; cur != nil {
		from, start = cur.Topic, cur.Partition
	}

	// The topics to answer, in name order, from the cursor's on.
	var names []string
	if all {
		for _, t := range im.Topics() {
			names = append(names, t.Name)
		}
	} else {
		for _, rt := range req.Topics {
			names = append(names, rt.Topic)
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n < from })
	slices.Sort(names)
	names = slices.Compact(names)
	if req.Cursor != nil && (start < 0 || !all && !slices.Contains(names, from)) {
		// Kafka's answer to the request's InvalidRequestException: the
		// code on every topic named.
		for _, rt := range req.Topics {
			resp.Topics = append(resp.Topics, topicPartitionsError(rt.Topic, kerr.InvalidRequest.Code))
		}
		r.Respond(resp)
		return
	}

	limit := max(min(req.ResponsePartitionLimit, maxRequestPartitionSizeLimit), 1)
	var refused []kmsg.DescribeTopicPartitionsResponseTopic
	for _, name := range names {
		if !c.Allows(opDescribe, topicResource, name) {
			if !all {
				refused = append(refused, topicPartitionsError(name, kerr.TopicAuthorizationFailed.Code))
			}
			continue
		}
		t, err := im.Topic(name)
		if err != nil {
			if !all {
				resp.Topics = append(resp.Topics, topicPartitionsError(name, errorCode(err)))
			}
			continue
		}
		first := int32(0)
		if name == from {
			first = start
		}
		if limit == 0 {
			// The answer is full: the next one starts at this topic.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: first}
			break
		}
		dt := describeTopicPartitions(im, t, first, limit)
		dt.AuthorizedOperations = c.Operations(topicResource, name)
		limit -= int32(len(dt.Partitions))
		resp.Topics = append(resp.Topics, dt)
		if next := first + int32(len(dt.Partitions)); int(next) < len(t.Partitions) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: next}
			break
		}
	}
	resp.Topics = append(resp.Topics, refused...)
	r.Respond(resp)
}

// describeTopicPartitions describes t with at most limit of its
// partitions, from first on.
func describeTopicPartitions(im *metadata.Image, t *metadata.Topic, first, limit int32) kmsg.DescribeTopicPartitionsResponseTopic {
	dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	name := t.Name
	dt.Topic, dt.TopicID, dt.IsInternal = &name, t.ID, coordinator.IsInternal(name)
	for i := int(first); i < len(t.Partitions) && int32(len(dt.Partitions)) < limit; i++ {
		p := t.Partitions[i]
		dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		dp.Partition = int32(i)
		dp.Replicas, dp.LeaderID, dp.LeaderEpoch, dp.ISR = p.Replicas, p.Leader, p.LeaderEpoch, p.ISR
		dp.OfflineReplicas, dp.ErrorCode = offlineReplicas(im, p), partitionCode(p)
		dp.EligibleLeaderReplicas, dp.LastKnownELR = []int32{}, []int32{}
		dt.Partitions = append(dt.Partitions, dp)
	}
	return dt
}

// topicPartitionsError is a named topic's answer with code, and no id.
func topicPartitionsError(name string, code int16) kmsg.DescribeTopicPartitionsResponseTopic {
	dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	dt.Topic, dt.ErrorCode = &name, code
	return dt
}
