package server

// ElectLeaders: v0-v2.
//
// Elects leaders for the partitions named (all of them when topics is
// null, answering only those an election was tried for, as Kafka's
// controller does): preferred (v0, and election type 0) makes a
// partition's first replica its leader where it is live and in the ISR,
// else PREFERRED_LEADER_NOT_AVAILABLE; unclean (type 1) gives an offline
// partition a live replica of its ISR, else any live replica, alone in
// the ISR, else ELIGIBLE_LEADERS_NOT_AVAILABLE. A partition that has the
// leader asked for is ELECTION_NOT_NEEDED, an unknown one
// UNKNOWN_TOPIC_OR_PARTITION. The elections of one request are one
// record of the metadata log, committed by the active controller (a
// broker that is not forwards the request to it, as Kafka 4's brokers
// do); the answer comes once the record is applied here, so a Metadata
// sent after it sees the new leaders. timeout_ms bounds the wait
// (REQUEST_TIMED_OUT for every partition past it).
//
// Authorization (authz.go): ALTER on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED, top level (v1+) and for every partition.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ElectLeaders, 0, 2, (*Server).handleElectLeaders) }

func (s *Server) handleElectLeaders(r *kafkanet.Request) {
	if s.atController(r) {
		return
	}
	req := r.Msg.(*kmsg.ElectLeadersRequest)
	typ := metadata.ElectionType(req.ElectionType)
	if req.Version == 0 {
		typ = metadata.ElectPreferred
	}
	if typ != metadata.ElectPreferred && typ != metadata.ElectUnclean {
		r.Respond(authz.ErrorResponse(req, kerr.InvalidRequest.Code))
		return
	}

	// The partitions asked for, by topic id; a topic the image lacks is
	// answered UNKNOWN_TOPIC_OR_PARTITION for each of its partitions.
	im := s.image()
	var parts []metadata.PartitionRef
	names := make(map[metadata.TopicID]string)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	unknown := make(map[string]*kmsg.ElectLeadersResponseTopic)
	for _, rt := range req.Topics {
		t, err := im.Topic(rt.Topic)
		if err != nil {
			st := unknown[rt.Topic]
			if st == nil {
				st = &kmsg.ElectLeadersResponseTopic{Topic: rt.Topic}
				unknown[rt.Topic] = st
			}
			for _, p := range rt.Partitions {
				st.Partitions = append(st.Partitions, electionResult(p, err))
			}
			continue
		}
		names[t.ID] = t.Name
		for _, p := range rt.Partitions {
			parts = append(parts, metadata.PartitionRef{Topic: t.ID, Index: p})
		}
	}
	if req.Topics == nil {
		parts = nil // every partition
	} else if parts == nil {
		parts = []metadata.PartitionRef{}
	}

	ctx, cancel := decisionContext(req.TimeoutMillis)
	defer cancel()
	done, results, err := s.ctrl().ElectLeaders(ctx, typ, parts)
	if err != nil {
		refuseDecision(r, req, "leader elections", err)
		return
	}
	if req.Topics == nil {
		im = s.image() // names of the topics the controller found
		for _, ref := range done {
			if t, err := im.TopicByID(ref.Topic); err == nil {
				names[ref.Topic] = t.Name
			}
		}
	}

	byTopic := make(map[string]*kmsg.ElectLeadersResponseTopic)
	var order []string
	topic := func(name string) *kmsg.ElectLeadersResponseTopic {
		st := byTopic[name]
		if st == nil {
			st = &kmsg.ElectLeadersResponseTopic{Topic: name}
			byTopic[name] = st
			order = append(order, name)
		}
		return st
	}
	elected := 0
	for i, ref := range done {
		if results[i] == nil {
			elected++
		}
		st := topic(names[ref.Topic])
		st.Partitions = append(st.Partitions, electionResult(ref.Index, results[i]))
	}
	for _, rt := range req.Topics {
		if st := unknown[rt.Topic]; st != nil {
			topic(rt.Topic).Partitions = append(topic(rt.Topic).Partitions, st.Partitions...)
			delete(unknown, rt.Topic)
		}
	}
	for _, name := range order {
		resp.Topics = append(resp.Topics, *byTopic[name])
	}
	if elected > 0 {
		r.Logger().Info("elected leaders", zap.Int8("election_type", int8(typ)), zap.Int("partitions", elected))
	}
	r.Respond(resp)
}

// electionResult is one partition's answer.
func electionResult(partition int32, err error) kmsg.ElectLeadersResponseTopicPartition {
	sp := kmsg.NewElectLeadersResponseTopicPartition()
	sp.Partition = partition
	if err != nil {
		sp.ErrorCode = electionCode(err)
		sp.ErrorMessage = errorMessage(err)
	}
	return sp
}

// electionCode maps metadata.Elect's errors to Kafka's codes.
func electionCode(err error) int16 {
	switch {
	case errors.Is(err, metadata.ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, metadata.ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, metadata.ErrEligibleLeadersNotAvailable):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, metadata.ErrUnknownTopic), errors.Is(err, metadata.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	}
	return errorCode(err)
}
