package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/share"
)

// shareAck is one acknowledgement batch, as ShareFetch and
// ShareAcknowledge carry them.
type shareAck struct {
	first, last int64
	types       []int8
}

// acknowledge applies a member's acknowledgement batches to one share
// partition, in order, and returns the partition's code: the first
// batch's error (INVALID_RECORD_STATE for records the member does not
// hold, INVALID_REQUEST for a malformed batch), the later batches still
// applied as Kafka applies them. A partition this broker does not lead is
// NOT_LEADER_OR_FOLLOWER, and one the group never fetched here
// INVALID_RECORD_STATE (it holds nothing). The partition is returned
// (nil with a code) for the caller to write its new state (Persist) and
// answer once it is durable.
func (s *Server) acknowledge(group, member string, tp shareTP, acks []shareAck) (int16, *share.Partition) {
	if code := s.shareLeaderCode(tp); code != 0 {
		return code, nil
	}
	sp := s.share.parts.Get(share.Key{Group: group, Topic: tp.topic, Partition: tp.partition})
	if sp == nil {
		return kerr.InvalidRecordState.Code, nil
	}
	lockFor := s.lockDuration(group)
	var first error
	for _, a := range acks {
		if err := sp.Acknowledge(member, a.first, a.last, a.types, lockFor); err != nil && first == nil {
			first = err
		}
	}
	switch {
	case first == nil:
		return 0, sp
	case errors.Is(first, share.ErrInvalidAcknowledgement):
		return kerr.InvalidRequest.Code, sp
	}
	return kerr.InvalidRecordState.Code, sp
}

// shareLeaderCode returns the error a share request gets for tp here:
// UNKNOWN_TOPIC_ID for a topic this broker does not know,
// UNKNOWN_TOPIC_OR_PARTITION for a partition past its count,
// NOT_LEADER_OR_FOLLOWER when it does not lead the partition; 0 when it
// leads it.
func (s *Server) shareLeaderCode(tp shareTP) int16 {
	t, err := s.replicas.Store().TopicByID(tp.topic)
	if err != nil {
		return kerr.UnknownTopicID.Code
	}
	p, err := t.Partition(tp.partition)
	if err != nil {
		return kerr.UnknownTopicOrPartition.Code
	}
	if s.replicas.Leads(p) != nil {
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

// releaseShare releases what member holds in each of tps here (its share
// session closed).
func (s *Server) releaseShare(group, member string, tps []shareTP) {
	for _, tp := range tps {
		if sp := s.share.parts.Get(share.Key{Group: group, Topic: tp.topic, Partition: tp.partition}); sp != nil {
			sp.Release(member)
		}
	}
}

// shareMember returns the group and member a ShareFetch or
// ShareAcknowledge names, or the code to answer it with: INVALID_REQUEST
// when it names no group or no member, GROUP_AUTHORIZATION_FAILED without
// READ on the group.
func shareMember(c access, groupID, memberID *string) (group, member string, code int16) {
	if groupID == nil || memberID == nil || *groupID == "" || *memberID == "" {
		return "", "", kerr.InvalidRequest.Code
	}
	if !c.Allows(opRead, groupResource, *groupID) {
		return "", "", kerr.GroupAuthorizationFailed.Code
	}
	return *groupID, *memberID, 0
}
