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
// and empty logs. Only the controller deletes topics (NOT_CONTROLLER
// elsewhere); the other brokers follow at their next metadata poll.
//
// Not implemented: the timeout (deletion is synchronous), authorization,
// and throttling.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

func init() { serve(kmsg.DeleteTopics, 0, 6, (*Server).handleDeleteTopics) }

func (s *Server) handleDeleteTopics(r *request) {
	req := r.kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	entries := req.Topics
	if req.Version < 6 {
		entries = make([]kmsg.DeleteTopicsRequestTopic, len(req.TopicNames))
		for i := range req.TopicNames {
			entries[i].Topic = &req.TopicNames[i]
		}
	}
	for _, e := range entries {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = e.Topic, e.TopicID
		var (
			t   *storage.Topic
			err error
		)
		switch {
		case !s.cl.isController():
			err = fmt.Errorf("%w: broker %d deletes topics", errNotController, s.cl.controller())
		case e.Topic != nil && e.TopicID != [16]byte{}:
			err = fmt.Errorf("%w: give a topic's name or its id, not both", errInvalidRequest)
		case e.Topic != nil:
			t, err = s.data.store.DeleteTopic(*e.Topic)
		default:
			t, err = s.data.store.DeleteTopicByID(e.TopicID)
		}
		if t != nil {
			name := t.Name
			st.Topic, st.TopicID = &name, t.ID
			s.wakeDeleted(t)
			r.log().Info("deleted topic", zap.String("topic", t.Name))
			if err != nil {
				// Deleted, but a log failed to close: the topic is gone
				// either way, which is what the client asked for.
				r.log().Warn("closing a deleted topic's logs", zap.Error(err))
				err = nil
			}
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
	r.respond(resp)
}

// wakeDeleted checks the fetches and produces waiting on t's partitions:
// each sees its partition deleted and is answered with an error now rather
// than at its deadline.
func (s *Server) wakeDeleted(t *storage.Topic) {
	for _, p := range t.Partitions {
		s.wake(p)
	}
}
