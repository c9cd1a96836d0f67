package server

// CreatePartitions: v0-v3.
//
// Grows each topic to count partitions, the new total; validate_only
// checks everything and grows nothing. The new partitions are placed as
// metadata.Place places a topic's (partition p on the brokers from index
// p mod n), so a manual assignment must give exactly count minus the
// current partitions entries, each of the topic's replication factor and
// that placement (INVALID_REPLICA_ASSIGNMENT otherwise, with Kafka's
// message where Kafka has one). A count not above the topic's is
// INVALID_PARTITIONS, with Kafka's messages ("Topic already has 3
// partition(s).", "The topic t currently has 3 partition(s); 2 would not
// be an increase."), more than 65536 in all INVALID_PARTITIONS too (as
// CreateTopics), a growth that would take the broker past
// max.broker.partitions (all the request's topics counted together)
// POLICY_VIOLATION with a message, an unknown topic
// UNKNOWN_TOPIC_OR_PARTITION, and a topic listed twice INVALID_REQUEST,
// answered once, as Kafka's controller answers.
//
// The internal topics (__consumer_offsets, __transaction_state,
// __share_group_state) are refused, INVALID_REQUEST: their partition
// count is part of how the coordinators hash groups and transactional
// ids to partitions, and growing it would move them away from their
// state. Kafka lets an operator do it (and warns against it); this
// broker does not.
//
// Only the active controller decides (a broker that is not forwards
// the request to it, as Kafka 4's brokers do): every topic of the request
// is decided against one image and the growths are one record of the
// metadata log, which every broker applies (package replica): it opens
// the new partitions' logs, leads or follows them as the record places
// them, and records the new count in its log.dirs catalog. The answer
// comes once the record is applied here, so a Metadata sent after it
// sees the new partitions. timeout_ms bounds the wait
// (REQUEST_TIMED_OUT for every topic past it).
//
// Authorization (authz.go): ALTER on the topic, else
// TOPIC_AUTHORIZATION_FAILED whether it exists or not, checked by the
// broker the client sent the request to, before it forwards the rest.
//
// Throttling (mutation_quota.go): the partitions a topic gains are
// charged to its client's controller_mutation_rate by the broker the
// client sent the request to, which alone knows the client (the
// controller charges nothing for a request a peer forwards): counted by
// that broker's image, and given back for a topic the controller
// refuses. From v3, a topic its client cannot afford, once it owes, is
// THROTTLING_QUOTA_EXCEEDED with Kafka's message, answered by that
// broker and not forwarded, and throttle_time_ms says how long the debt
// takes to pay; before v3 every topic grows and the debt only throttles.
// The connection is muted for the throttle.
//
// Not implemented: creation policies.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.CreatePartitions, 0, 3, (*Server).handleCreatePartitions) }

func (s *Server) handleCreatePartitions(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.CreatePartitionsRequest)
	count := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	// The checks that need the client's principal are made here, before
	// the rest goes to the controller, which sees this broker's.
	c := s.access(r)
	mq := s.mutationQuota(r, strictCreatePartitions)
	charged := make(map[string]int) // the mutations charged for each topic kept
	var refused []kmsg.CreatePartitionsResponseTopic
	kept := *req
	kept.Topics = make([]kmsg.CreatePartitionsRequestTopic, 0, len(req.Topics))
	for _, rt := range req.Topics {
		var err error
		switch {
		case count[rt.Topic] != 1:
			if count[rt.Topic] == 0 {
				continue // answered once already
			}
			count[rt.Topic] = 0
			err = fmt.Errorf("%w: Duplicate topic name.", errInvalidRequest)
		case !c.Allows(opAlter, topicResource, rt.Topic):
			err = errTopicAuthorization
		default:
			if n := s.partitionsAdded(rt); n > 0 {
				if !mq.Record(n) {
					err = errThrottlingQuota
					break
				}
				charged[rt.Topic] = n
			}
			kept.Topics = append(kept.Topics, rt)
			continue
		}
		refused = append(refused, partitionsResult(rt.Topic, err))
	}
	finish := func(resp kmsg.Response) {
		cp := resp.(*kmsg.CreatePartitionsResponse)
		for _, st := range cp.Topics {
			if st.ErrorCode != 0 {
				mq.Unrecord(charged[st.Topic]) // refused by the controller: Kafka's would not have charged it
			}
		}
		cp.Topics = append(refused, cp.Topics...)
		throttleMutations(r, mq, cp)
	}
	if len(kept.Topics) > 0 && s.forwardToController(r, &kept, finish) {
		return
	}
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	if len(kept.Topics) > 0 {
		s.createPartitions(r, &kept, resp)
	}
	finish(resp)
	r.Respond(resp)
}

// createPartitions decides req's growths, at the active controller, and
// answers each of its topics in resp.
func (s *Server) createPartitions(r *kafkanet.Request, req *kmsg.CreatePartitionsRequest, resp *kmsg.CreatePartitionsResponse) {
	results := make([]error, len(req.Topics))
	var (
		specs []controller.PartitionsSpec
		asked []int // the index in req.Topics of each spec
	)
	for i, rt := range req.Topics {
		if coordinator.IsInternal(rt.Topic) {
			results[i] = fmt.Errorf("%w: %s is internal: its partition count places its coordinators' keys, and cannot change",
				errInvalidRequest, rt.Topic)
			continue
		}
		spec := controller.PartitionsSpec{Topic: rt.Topic, Count: rt.Count}
		if rt.Assignment != nil {
			spec.Assignment = make([][]int32, len(rt.Assignment))
			for j, a := range rt.Assignment {
				spec.Assignment[j] = a.Replicas
			}
		}
		specs, asked = append(specs, spec), append(asked, i)
	}

	// The storage's bounds, on this broker's store, which holds every
	// partition of the cluster as every broker's does: the topics before
	// this one in the request count as added.
	pending := 0
	check := func(t *metadata.Topic, count int32) error {
		if err := s.data.store.CheckAddPartitions(t.Name, count, pending); err != nil {
			return err
		}
		pending += int(count) - len(t.Partitions)
		return nil
	}
	ctx, cancel := decisionContext(req.TimeoutMillis)
	defer cancel()
	errs, err := s.ctrl().CreatePartitions(ctx, specs, req.ValidateOnly, check)
	for j, i := range asked {
		if err != nil {
			results[i] = err
		} else {
			results[i] = errs[j]
		}
	}
	for i, rt := range req.Topics {
		if results[i] != nil {
			refuseData(r, results[i])
		} else if !req.ValidateOnly {
			r.Logger().Info("added partitions", zap.String("topic", rt.Topic), zap.Int32("partitions", rt.Count))
		}
		resp.Topics = append(resp.Topics, partitionsResult(rt.Topic, results[i]))
	}
}

// partitionsAdded returns how many partitions rt would add to its topic
// by this broker's image, the mutations it is charged: 0 for a topic the
// controller will refuse whatever the quota (unknown, internal, or not
// growing), which costs nothing, as Kafka's controller checks the quota
// after those. A broker that is not the controller may lag it by a few
// records; a topic the controller then refuses is given back its charge.
func (s *Server) partitionsAdded(rt kmsg.CreatePartitionsRequestTopic) int {
	t, err := s.image().Topic(rt.Topic)
	if err != nil || coordinator.IsInternal(rt.Topic) {
		return 0
	}
	return max(0, int(rt.Count)-len(t.Partitions))
}

// partitionsResult is one topic's answer.
func partitionsResult(topic string, err error) kmsg.CreatePartitionsResponseTopic {
	st := kmsg.NewCreatePartitionsResponseTopic()
	st.Topic = topic
	if err != nil {
		st.ErrorCode = errorCode(err)
		st.ErrorMessage = errorMessage(err)
	}
	return st
}
