package server

// Fetch: v4-v18.
//
// Reads each partition from its fetch offset, up to the high watermark
// (read_uncommitted) or the last stable offset (read_committed: below
// every open transaction's first batch), a read_committed answer listing
// the aborted transactions among its batches (aborted_transactions), so
// that the client drops their records. Partitions are named by topic name, or by topic id from
// v13 (UNKNOWN_TOPIC_ID when unknown). Whole batches are returned: the one
// holding the fetch offset, then the next ones while they fit in
// partition_max_bytes and the response's max_bytes, which the broker caps
// with fetch.max.bytes (and min_bytes with the result), except that the
// first batch of the first partition with data is returned whatever its
// size, as Kafka does, so that a consumer always progresses: a response
// holds at most fetch.max.bytes of records and one batch (at most
// max.message.bytes). The records count in queued.max.request.bytes until
// written; a fetch answered while that budget is spent holds less, down to
// the one batch. An offset before the
// log start or past the log end is OFFSET_OUT_OF_RANGE; current_leader_epoch
// (v9+) newer than the partition's is UNKNOWN_LEADER_EPOCH, older
// FENCED_LEADER_EPOCH.
//
// Long polling is Kafka's DelayedFetch: when fewer than min_bytes are
// readable (for read_committed, stable: below the last stable offset,
// which a transaction marker moves), the fetch waits in the Fetch purgatory, keyed by its
// partitions, until an append makes min_bytes readable (counting each
// partition up to its partition_max_bytes), a partition is deleted or its
// offset falls out of range, or max_wait_ms passes; then it reads the logs
// again and answers. A client that disconnects meanwhile has its fetch
// completed by its connection, so nothing is left waiting. A partition
// that fails to be read (out of range, fenced) answers at once; an unknown
// topic, topic id or partition is answered with its error without cutting
// the wait for the others, as in Kafka (see replica.Manager.Fetch), and a fetch
// of nothing but unknown partitions answers at once.
//
// Fetch sessions (KIP-227, v7+; fetch_sessions.go): a consumer's fetch at
// session epoch 0 opens one, and its later fetches name only what changed
// and are answered only on the partitions with something new. A
// follower's fetches are full. With max.incremental.fetch.session.cache.slots
// 0, none is made: every fetch is full, answered with session id 0, and an
// incremental one gets FETCH_SESSION_ID_NOT_FOUND.
//
// A partition this broker does not lead is NOT_LEADER_OR_FOLLOWER.
//
// Replica fetches (replica_id >= 0, or replica_state from v15) come from
// followers (package replica): they read up to the log end, whatever the
// isolation level, and wait in the same purgatory for an append; the fetch
// offset of each partition is the follower's log end offset, which may
// move the high watermark. A broker that holds no replica of the
// partition is answered NOT_LEADER_OR_FOLLOWER.
//
// Authorization (authz.go): each topic needs READ, a replica's fetch
// CLUSTER_ACTION on the cluster; a topic refused is answered
// TOPIC_AUTHORIZATION_FAILED (every topic of a refused replica fetch, as
// Kafka answers it) and set aside as an unknown one, not cutting the
// wait for the others. A topic id the broker does not know is
// UNKNOWN_TOPIC_ID first.
//
// Not implemented: preferred read replicas (KIP-392: rack is ignored, -1 is answered);
// divergence checks against last_fetched_epoch (KIP-595's diverging_epoch
// in the answer: a follower asks OffsetForLeaderEpoch before it fetches at
// a new leader epoch instead, and truncates by epoch, see
// replica.Fetcher).
//
// Quotas (quotas.go): a client's consumer_byte_rate bounds the records
// its fetches return, recorded when answered, its max_bytes capped at
// what the quota allows over its windows; a fetch that takes it over is
// answered at once, empty (its records not counted), with
// throttle_time_ms, and its connection muted that long (KIP-219), as
// Kafka answers it. A follower's fetch is exempt.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.Fetch, 4, 18, (*Server).handleFetch) }

func (s *Server) handleFetch(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.FetchRequest)
	full, session, code := s.fetchSessions.begin(req, replicaOf(req) >= 0)
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		r.Respond(resp)
		return
	}
	w := s.fetchWithQuota(r, full)
	if session != nil {
		w = sessionResponder{Responder: w, s: session, full: req.SessionEpoch == 0}
	}
	s.replicas.Fetch(w, full, s.fetchRefusals(s.access(r), full))
}

// replicaOf is the replica id a fetch gives: a follower's broker id, or
// -1 for a consumer.
func replicaOf(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// fetchRefusals returns, by topic index, the topics of req the client may
// not read (see replica.Manager.Fetch); nil without an authorizer.
func (s *Server) fetchRefusals(c access, req *kmsg.FetchRequest) []int16 {
	if !c.On() {
		return nil
	}
	refused := make([]int16, len(req.Topics))
	if replicaOf(req) >= 0 {
		if !c.Allows(opClusterAction, clusterRes, acl.ClusterName) {
			for i := range refused {
				refused[i] = kerr.TopicAuthorizationFailed.Code
			}
		}
		return refused
	}
	for i := range req.Topics {
		name := req.Topics[i].Topic
		if req.Version >= 13 {
			t, err := s.replicas.Store().TopicByID(req.Topics[i].TopicID)
			if err != nil {
				continue // UNKNOWN_TOPIC_ID, whoever asks
			}
			name = t.Name
		}
		refused[i] = c.TopicCode(opRead, name)
	}
	return refused
}
