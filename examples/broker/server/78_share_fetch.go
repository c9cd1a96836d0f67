package server

// ShareFetch: v1-v2.
//
// Fetches records for a member of a share group (KIP-932): on each
// partition of its share session (share_sessions.go) the broker, which
// must lead it, acquires records for the member (package share), up to
// max_records in all, each acquisition under a lock of
// share.record.lock.duration.ms (answered as acquisition_lock_timeout_ms),
// and answers the batches that hold them with the acquired ranges and
// their delivery counts; the client keeps the acquired records of those
// batches. How max_records bounds them is v2's share_acquire_mode
// (KIP-1206): batch_optimized (0, v1's only mode) rounds new records up
// to their batch's end, so that max_records is a soft limit;
// record_limit (1) acquires max_records at most, cutting a batch (the
// batch is still answered whole); another value is INVALID_REQUEST. A share partition's window is read from the share coordinator
// the first time the group fetches it on this leader (at this leader
// epoch: share_state.go), and records are acquired once it is; a state
// never initialized starts at share.auto.offset.reset (latest by default:
// the high watermark; earliest: the log start), a group config
// (share_configs.go). A group whose share.isolation.level is
// read_committed acquires nothing from the last stable offset on, and
// has the records of aborted transactions archived rather than handed
// out (share_isolation.go).
//
// Acknowledgements ride along (acknowledgement_batches, from session
// epoch 1): applied before anything is acquired, and their new state
// written durably at the share coordinator while the fetch acquires and
// waits, as Kafka's KafkaApis does both side by side; answered, once
// durable, per partition in acknowledge_error_code
// (COORDINATOR_NOT_AVAILABLE if the write failed). Epoch -1 closes the
// session: the member's acknowledgements are applied, the records it
// still holds released once they are durable, and nothing is fetched. The session adds the named partitions, then drops
// the forgotten ones, as Kafka's does: a partition both named and
// forgotten has its acknowledgements applied and answered, and nothing
// fetched.
//
// When nothing can be acquired, the fetch waits in the ShareFetch
// purgatory (share_fetch_wait.go) under each partition's share-partition
// key and partition key, until records are appended, released, expire or
// the start moves, or max_wait_ms passes.
//
// Authorization (authz.go): READ on the group (GROUP_AUTHORIZATION_FAILED
// for the request) and READ on each topic (TOPIC_AUTHORIZATION_FAILED for
// its partitions).
//
// Not implemented: min_bytes and max_bytes (max_records bounds the answer;
// the batches holding the acquired records are always returned whole),
// batch_size, node_endpoints for a partition led elsewhere (the client
// refreshes its metadata on NOT_LEADER_OR_FOLLOWER), renewals in a fetch
// (is_renew_ack: ShareAcknowledge carries them).

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ShareFetch, 1, 2, (*Server).handleShareFetch) }

func (s *Server) handleShareFetch(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	c := s.access(r)
	group, member, code := shareMember(c, req.GroupID, req.MemberID)
	if code != 0 {
		resp.ErrorCode = code
		r.Respond(resp)
		return
	}
	lockFor := s.lockDuration(group)
	resp.AcquisitionLockTimeoutMillis = int32(lockFor.Milliseconds())

	var add, forget []shareTP
	acks := make(map[shareTP][]shareAck)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := shareTP{t.TopicID, p.Partition}
			add = append(add, tp)
			for _, b := range p.AcknowledgementBatches {
				acks[tp] = append(acks[tp], shareAck{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
			}
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, shareTP{t.TopicID, p})
		}
	}
	mode := share.AcquireMode(req.ShareAcquireMode) // 0 below v2
	if req.ShareSessionEpoch == 0 && len(acks) > 0 || !mode.Valid() {
		// A new session holds nothing to acknowledge; a mode is one of
		// KIP-1206's.
		resp.ErrorCode = kerr.InvalidRequest.Code
		r.Respond(resp)
		return
	}
	tps, err := s.share.sessions.fetch(group, member, req.ShareSessionEpoch, add, forget)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		r.Respond(resp)
		return
	}
	f := &delayedShareFetch{s: s, r: r, resp: resp, member: member, maxRecords: int(req.MaxRecords), mode: mode,
		lockFor: lockFor, readCommitted: s.groupConfig(group, cfgShareIsolationLevel) == "read_committed"}
	if f.maxRecords <= 0 {
		f.maxRecords = 500 // KIP-1206's default
	}
	acked := make([]*share.Partition, 0, len(acks))
	for _, tp := range tps {
		part := shareFetchPart{tp: tp}
		if a, ok := acks[tp]; ok {
			var sp *share.Partition
			part.acked = true
			part.ackCode, sp = s.acknowledge(group, member, tp, a)
			acked = append(acked, sp)
		}
		f.parts = append(f.parts, part)
	}
	// A partition named and forgotten in the same request (a client
	// acknowledging records of a partition it stopped fetching) is out of
	// the session, but its acknowledgements are applied and answered, as
	// Kafka's are; nothing is fetched of it.
	for _, tp := range add {
		a, ok := acks[tp]
		if !ok || slices.Contains(tps, tp) {
			continue
		}
		part := shareFetchPart{tp: tp, acked: true, left: true}
		var sp *share.Partition
		part.ackCode, sp = s.acknowledge(group, member, tp, a)
		acked = append(acked, sp)
		f.parts = append(f.parts, part)
	}
	// The acknowledgements' new state is written at the share
	// coordinator while the fetch acquires, as Kafka's KafkaApis runs the
	// two side by side: a record produced meanwhile does not wait for the
	// coordinator. The answer goes once both are done (f.done).
	f.done = countdown(2, f.respond)
	persistAll(acked, func(codes []int16) {
		// Kept apart from f.parts, which the fetch reads meanwhile.
		f.persisted = codes
		if req.ShareSessionEpoch == -1 {
			// A closing session fetches nothing: its records are
			// released once its acknowledgements were applied.
			s.releaseShare(group, member, tps)
		}
		f.done()
	})
	if req.ShareSessionEpoch != -1 {
		for j := range f.parts {
			if part := &f.parts[j]; !part.left {
				s.resolveSharePart(c, group, part)
			}
		}
	}
	if f.immediate() {
		f.answer()
		return
	}
	s.share.armWake() // before the first try: see armWake
	if err := wait(r, s.share.fetches, f, time.Duration(req.MaxWaitMillis)*time.Millisecond, f.keys()); err != nil {
		s.log.Debug("share fetch not delayed", zap.Error(err))
		f.answer()
	}
}

// resolveSharePart finds part's partition and share partition, or sets
// its code: the topic refused or unknown, the partition not led here.
func (s *Server) resolveSharePart(c access, group string, part *shareFetchPart) {
	t, err := s.replicas.Store().TopicByID(part.tp.topic)
	if err != nil {
		part.code = kerr.UnknownTopicID.Code
		return
	}
	if !c.Allows(opRead, topicResource, t.Name) {
		part.code = kerr.TopicAuthorizationFailed.Code
		return
	}
	p, err := t.Partition(part.tp.partition)
	if err != nil {
		part.code = kerr.UnknownTopicOrPartition.Code
		return
	}
	st, ok := s.replicas.State(p)
	if !ok || s.replicas.Leads(p) != nil {
		part.code = kerr.NotLeaderForPartition.Code
		return
	}
	earliest := s.groupConfig(group, cfgShareAutoOffsetReset) == "earliest"
	sp := s.share.parts.Lead(share.Key{Group: group, Topic: part.tp.topic, Partition: part.tp.partition}, st.LeaderEpoch, func() int64 {
		offs, err := p.Offsets()
		if err != nil {
			return 0
		}
		if earliest {
			return offs.LogStart
		}
		return offs.HighWatermark
	})
	part.p, part.sp, part.epoch = p, sp, st.LeaderEpoch
}
