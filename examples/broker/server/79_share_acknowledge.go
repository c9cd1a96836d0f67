package server

// ShareAcknowledge: v1-v2.
//
// Acknowledges records a member of a share group acquired (KIP-932):
// each batch names offsets first to last and one acknowledgement type for
// them all or one per offset: accept (1), release (2: available again,
// or archived once delivered share.delivery.count.limit times), reject (3),
// gap (0: an offset with no record, archived) and, from v2, renew (4,
// KIP-1222: the acquisition's lock starts again, answered with
// acquisition_lock_timeout_ms). Each partition is answered with its
// first batch's error: INVALID_RECORD_STATE for records the member does
// not hold (never acquired, another member's, or released when their lock
// expired). The request carries the share session's next epoch (0 is
// INVALID_SHARE_SESSION_EPOCH: a ShareAcknowledge opens no session); -1
// closes the session, and the records the member still holds are
// released.
//
// The answer waits until the new state of every partition acknowledged is
// durable at the share coordinator (share_state.go): a partition whose
// state could not be written is answered COORDINATOR_NOT_AVAILABLE (its
// records stay acknowledged here, and the next write carries them).
//
// Authorization (authz.go): READ on the group (GROUP_AUTHORIZATION_FAILED
// for the request) and READ on each topic (TOPIC_AUTHORIZATION_FAILED for
// its partitions).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"slices"

	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ShareAcknowledge, 1, 2, (*Server).handleShareAcknowledge) }

func (s *Server) handleShareAcknowledge(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	c := s.access(r)
	group, member, code := shareMember(c, req.GroupID, req.MemberID)
	if code != 0 {
		resp.ErrorCode = code
		r.Respond(resp)
		return
	}
	tps, err := s.share.sessions.acknowledge(group, member, req.ShareSessionEpoch)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		r.Respond(resp)
		return
	}
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(s.lockDuration(group).Milliseconds())
	}
	im := s.image()
	// written are the partitions acknowledged, at where (topic and
	// partition index) their answer is; those refused have none.
	var (
		written []*share.Partition
		where   [][2]int
	)
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		allowed := true
		if mt, err := im.TopicByID(t.TopicID); err == nil {
			allowed = c.Allows(opRead, topicResource, mt.Name)
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			tp := shareTP{t.TopicID, p.Partition}
			if !allowed {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else {
				acks := make([]shareAck, 0, len(p.AcknowledgementBatches))
				for _, b := range p.AcknowledgementBatches {
					acks = append(acks, shareAck{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
				}
				var sp *share.Partition
				rp.ErrorCode, sp = s.acknowledge(group, member, tp, acks)
				written = append(written, sp)
				where = append(where, [2]int{len(resp.Topics), len(rt.Partitions)})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	persistAll(written, func(codes []int16) {
		for i, code := range codes {
			if rp := &resp.Topics[where[i][0]].Partitions[where[i][1]]; rp.ErrorCode == 0 {
				rp.ErrorCode = code
			}
		}
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				rp := &resp.Topics[i].Partitions[j]
				if rp.ErrorCode == 0 {
					rp.CurrentLeader.LeaderID = s.cfg.NodeID
					continue
				}
				tp := shareTP{topic: resp.Topics[i].TopicID, partition: rp.Partition}
				leader, epoch, ep, hinted := s.leaderHint(r, tp, rp.ErrorCode)
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
				if hinted && !slices.ContainsFunc(resp.NodeEndpoints, func(e kmsg.ShareAcknowledgeResponseNodeEndpoint) bool { return e.NodeID == ep.id }) {
					resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareAcknowledgeResponseNodeEndpoint{NodeID: ep.id, Host: ep.host, Port: ep.port})
				}
			}
		}
		if req.ShareSessionEpoch == -1 {
			s.releaseShare(group, member, tps)
		}
		r.Respond(resp)
	})
}
