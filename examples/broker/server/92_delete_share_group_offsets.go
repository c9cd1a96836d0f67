package server

// DeleteShareGroupOffsets: v0.
//
// Forgets a share group's state of whole topics: the next fetch of their
// partitions starts again at share.auto.offset.reset. The group must be a
// share group (GROUP_ID_NOT_FOUND) with no member (NON_EMPTY_GROUP); an
// unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization (authz.go): DELETE on the group, else
// GROUP_AUTHORIZATION_FAILED; READ on each topic, else
// TOPIC_AUTHORIZATION_FAILED.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DeleteShareGroupOffsets, 0, 0, (*Server).handleDeleteShareGroupOffsets) }

func (s *Server) handleDeleteShareGroupOffsets(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	c := s.access(r)
	resp.ErrorCode = s.emptyShareGroupCode(c, req.GroupID, opDelete, false)
	if resp.ErrorCode != 0 {
		r.Respond(resp)
		return
	}
	im := s.image()
	type deleted struct {
		k     share.Key
		topic int // its answer's index
	}
	var (
		deletes []deleted
		mu      sync.Mutex // guards the topics' codes as deletes complete
	)
	for _, at := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = at.Topic
		t, err := im.Topic(at.Topic)
		switch {
		case !c.Allows(opRead, topicResource, at.Topic):
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case err != nil:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			rt.TopicID = t.ID
			for i := range t.Partitions {
				k := share.Key{Group: req.GroupID, Topic: t.ID, Partition: int32(i)}
				s.share.parts.Delete(k)
				deletes = append(deletes, deleted{k, len(resp.Topics)})
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	// Answered once every state is deleted at the share coordinator: a
	// topic whose state could not be is answered with the first error.
	done := countdown(len(deletes), func() { r.Respond(resp) })
	for _, d := range deletes {
		s.share.persister.Delete(d.k, func(err error) {
			if code := persistCode(err); code != 0 {
				mu.Lock()
				if rt := &resp.Topics[d.topic]; rt.ErrorCode == 0 {
					rt.ErrorCode = code
				}
				mu.Unlock()
			}
			done()
		})
	}
}
