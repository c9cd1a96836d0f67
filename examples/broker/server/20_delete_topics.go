package server

// DeleteTopics: v0-v6.
//
// Deletes topics by name (v0-v5, and v6 entries with a name) or by topic id
// (v6), at once. An unknown name is UNKNOWN_TOPIC_OR_PARTITION, an unknown
// id UNKNOWN_TOPIC_ID, and an entry with both a name and an id
// INVALID_REQUEST, as in Kafka. The requests waiting on the deleted
// partitions are answered now: each waiting fetch and acks=all produce is
// checked, sees its partition gone, and answers it with
// UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for a fetch by topic id).
// A topic created again under the same name is a new topic, with a new id
// and empty logs. Only the active controller deletes topics
// (NOT_CONTROLLER elsewhere): it commits the deletion to the metadata log,
// which every broker applies (package replica), answering what waited on
// them.
//
// Authorization (authz.go): DELETE on the cluster, or DESCRIBE and DELETE
// on the topic; else TOPIC_AUTHORIZATION_FAILED, whether the named topic
// exists or not (a topic id is resolved first: ids are not secret, as
// Kafka's ControllerApis answers).
//
// Throttling (mutation_quota.go): a deleted topic's partitions are charged
// to its client's controller_mutation_rate (a topic unknown costs
// nothing); from v5, a topic its client cannot afford, once it owes, is
// THROTTLING_QUOTA_EXCEEDED with Kafka's message and not deleted, and
// throttle_time_ms says how long the debt takes to pay; before v5 every
// topic is deleted and the debt only throttles. The connection is muted
// for the throttle.
//
// Not implemented: the timeout (deletion is synchronous).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DeleteTopics, 0, 6, (*Server).handleDeleteTopics) }

func (s *Server) handleDeleteTopics(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	entries := req.Topics
	if req.Version < 6 {
		entries = make([]kmsg.DeleteTopicsRequestTopic, len(req.TopicNames))
		for i := range req.TopicNames {
			entries[i].Topic = &req.TopicNames[i]
		}
	}
	c := s.access(r)
	clusterWide := c.Sees(opDelete, clusterRes, acl.ClusterName)
	mq := s.mutationQuota(r, strictDeleteTopics)
	for _, e := range entries {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = e.Topic, e.TopicID
		var (
			t   *metadata.Topic
			err error
		)
		switch {
		case !clusterWide && !s.mayDeleteTopic(c, e):
			err = errTopicAuthorization
		case !s.ctrl().IsActive():
			leader, _ := s.member.Leader()
			err = fmt.Errorf("%w: broker %d is the active controller", errNotController, leader)
		case e.Topic != nil && e.TopicID != [16]byte{}:
			err = fmt.Errorf("%w: give a topic's name or its id, not both", errInvalidRequest)
		default:
			n, ok := s.chargeDeletion(mq, e)
			if !ok {
				err = errThrottlingQuota
				break
			}
			name := ""
			if e.Topic != nil {
				name = *e.Topic
			}
			ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
			t, err = s.ctrl().DeleteTopic(ctx, name, metadata.TopicID(e.TopicID))
			cancel()
			if err != nil {
				mq.Unrecord(n) // not deleted after all (by another request meanwhile, or not committed)
			}
		}
		if t != nil && err == nil {
			name := t.Name
			st.Topic, st.TopicID = &name, t.ID
			r.Logger().Info("deleted topic", zap.String("topic", t.Name))
		}
		if err != nil {
			st.ErrorCode = errorCode(err)
			if e.Topic == nil && st.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				st.ErrorCode = kerr.UnknownTopicID.Code
			}
			st.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	throttleMutations(r, mq, resp)
	r.Respond(resp)
}

// chargeDeletion charges mq the partitions of the topic e names, and
// returns how many, and whether it may be deleted. A topic unknown costs
// nothing and is left to the deletion to answer
// UNKNOWN_TOPIC_OR_PARTITION or UNKNOWN_TOPIC_ID, as Kafka's controller
// charges only a topic it deletes. The topic is looked up in this
// broker's image, the active controller's.
func (s *Server) chargeDeletion(mq *quota.Mutations, e kmsg.DeleteTopicsRequestTopic) (n int, ok bool) {
	var (
		t   *metadata.Topic
		err error
	)
	if e.Topic != nil {
		t, err = s.image().Topic(*e.Topic)
	} else {
		t, err = s.image().TopicByID(metadata.TopicID(e.TopicID))
	}
	if err != nil {
		return 0, true
	}
	return len(t.Partitions), mq.Record(len(t.Partitions))
}

// mayDeleteTopic reports whether the client may DESCRIBE and DELETE the
// topic e names; a topic id that does not resolve is left to the
// deletion to answer UNKNOWN_TOPIC_ID.
func (s *Server) mayDeleteTopic(c access, e kmsg.DeleteTopicsRequestTopic) bool {
	var name string
	switch {
	case e.Topic != nil:
		name = *e.Topic
	default:
		t, err := s.image().TopicByID(metadata.TopicID(e.TopicID))
		if err != nil {
			return true
		}
		name = t.Name
	}
	return c.Allows(opDescribe, topicResource, name) && c.Allows(opDelete, topicResource, name)
}
