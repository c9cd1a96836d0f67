package server

// Fetch: v4-v18, as upstream serves it.
//
// A consumer's fetch (replica id -1) is answered partition by partition
// from where the answer is exact:
//
//   - A partition the proxy tails, at an offset its cache answers (package
//     cache: within the recent batches, or at the end), is read from the
//     cache: whole batches as upstream sent them, with upstream's high
//     watermark, last stable offset and log start.
//   - Any other partition is read from its upstream leader (max_wait 0,
//     at the client's version, on the client's own connection). When
//     upstream says the client is at the end of the partition (its offset
//     is the high watermark, nothing to read), the proxy starts tailing it
//     there, and the partition waits on the tail from then on.
//
// Then the fetch answers at once if it has min_bytes (each partition
// counted up to its partition_max_bytes) or a partition read upstream
// failed; else it waits in the proxy's Fetch purgatory, keyed by the
// partitions it reads from caches, until a tail appends enough
// (CheckAndComplete after each append), a tail stops, or max_wait_ms
// passes: Kafka's DelayedFetch, whose bytes come from another Kafka. A
// fetch that waits on no tail (none could start) waits upstream instead:
// its partitions are read again with the time left and min_bytes. When it
// completes, each partition is read again from its cache; one the cache
// no longer answers exactly (its tail stopped, its offset was evicted, a
// transactional batch for read_committed) is read from upstream, so that
// the client gets upstream's answer (its data, or its error:
// OFFSET_OUT_OF_RANGE, NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION
// after a deletion). A read that fails in transport, when upstream went
// away, answers NOT_LEADER_OR_FOLLOWER, which clients retry after a
// metadata refresh. An unknown topic or partition is answered with its
// error without cutting the wait for the others, as Kafka does.
//
// The response's max_bytes is shared by its partitions in request order,
// in whole batches; the first batch of the first partition with data is
// returned whatever its size (Kafka's minOneMessage). read_committed is
// answered from a cache only where no aborted-transaction index is needed
// (package cache); elsewhere upstream answers it, aborted transactions
// included. A current_leader_epoch other than the tail's sends the
// partition upstream, which fences or accepts it. A client that
// disconnects has its waiting fetches completed by its connection.
//
// Authorization (authz.go): READ on each topic. A denied topic's
// partitions answer TOPIC_AUTHORIZATION_FAILED and are taken out before
// the fetch is built: they are never read, from upstream or from a cache
// another client's long poll filled, and they do not cut the others'
// wait, as Kafka sets them aside.
//
// Fetch sessions (KIP-227, v7+; fetch_sessions.go), served as Kafka
// serves them: a consumer's full fetch at epoch 0 opens one (session id
// 0 when the cache, max.incremental.fetch.session.cache.slots, has no
// room); its incremental fetches name what they add, update or forget,
// and are answered only on the partitions with records, an error or a
// moved high watermark, log start or last stable offset. A session is
// resolved before the fetch is checked: what is authorized, read and
// waited on in the purgatory is every partition of the session, not only
// those the fetch names. Epoch -1 (or 0) with a session id closes that
// session. Errors, answered at once with no partition and session id 0:
// FETCH_SESSION_ID_NOT_FOUND (a session the cache does not hold),
// INVALID_FETCH_SESSION_EPOCH (not the session's next epoch, or a
// duplicate), FETCH_SESSION_TOPIC_ID_ERROR (a session by topic id fetched
// by name, or the reverse). Upstream, the proxy's own fetches are
// sessionless. Replica fetches are not proxied: every partition answers
// NOT_LEADER_OR_FOLLOWER, and they open no session.
// Not implemented: preferred read replicas (-1 is answered: the proxy is
// the only broker clients see), quotas.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() {
	a := serve(kmsg.Fetch, 4, 18, (*Server).handleFetch)
	a.Handler.check, a.Handler.begin = authorizeFetch, (*Server).beginFetchSession
}

// beginFetchSession resolves r's fetch session before r is checked
// (fetch_sessions.go): a session error is answered at once, with no
// partition; otherwise r becomes the fetch the session stands for (every
// partition of the session: what is authorized, read and waited on), and
// its answer goes through the session.
func (s *Server) beginFetchSession(r *request) bool {
	req := r.Msg.(*kmsg.FetchRequest)
	full, finish, code := s.sessions.begin(req, replicaOf(req) >= 0)
	if code != 0 {
		r.Logger().Debug("fetch session refused", zap.Int32("session_id", req.SessionID),
			zap.Int32("epoch", req.SessionEpoch), zap.Error(kerr.ErrorForCode(code)))
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		r.Respond(resp)
		return true
	}
	r.Msg = full
	if finish != nil {
		r.finish = func(resp kmsg.Response) {
			m := resp.(*kmsg.FetchResponse)
			finish(m)
			if req.SessionEpoch == 0 && m.SessionID != 0 {
				r.Logger().Debug("fetch session opened", zap.Int32("session_id", m.SessionID))
			}
		}
	}
	return false
}

// replicaOf is the replica id of a fetch: a broker's, or -1 for a
// consumer.
func replicaOf(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

func authorizeFetch(s *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	f := req.(*kmsg.FetchRequest)
	return checked(req, f.Topics, func(t kmsg.FetchRequestTopic) int16 {
		return s.topicCode(c, kmsg.ACLOperationRead, t.Topic, t.TopicID, f.Version >= 13)
	},
		func(kept []kmsg.FetchRequestTopic) kmsg.Request { q := *f; q.Topics = kept; return &q },
		func(resp kmsg.Response, d refused[kmsg.FetchRequestTopic]) {
			m := resp.(*kmsg.FetchResponse)
			if m.ErrorCode != 0 {
				return // a session error: no partition is answered
			}
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = d.item.Topic, d.item.TopicID
			for _, rp := range d.item.Partitions {
				rt.Partitions = append(rt.Partitions, errorPart(rp.Partition, d.code))
			}
			m.Topics = append(m.Topics, rt)
		})
}

func (s *Server) handleFetch(r *request) {
	f := s.newDelayedFetch(r, r.Msg.(*kmsg.FetchRequest))
	if f.replica {
		f.respond()
		return
	}
	var up []int
	for i := range f.parts {
		if !f.fromTail(i) {
			up = append(up, i)
		}
	}
	if len(up) == 0 {
		f.wait()
		return
	}
	f.readUpstream(up, 0, 1, func() { f.tailAtEnd(up); f.wait() })
}

// setAside reports whether a partition's error leaves the fetch waiting
// for its other partitions, as Kafka sets unknown partitions aside before
// it reads the others (a consumer of a deleted topic next to live ones
// would otherwise poll in a tight loop until its metadata catches up).
func setAside(code int16) bool {
	return code == kerr.UnknownTopicOrPartition.Code || code == kerr.UnknownTopicID.Code
}

// movedLeadership reports whether a partition error says the proxy's
// metadata may be stale.
func movedLeadership(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.FencedLeaderEpoch.Code, kerr.UnknownLeaderEpoch.Code,
		kerr.LeaderNotAvailable.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code:
		return true
	}
	return false
}
