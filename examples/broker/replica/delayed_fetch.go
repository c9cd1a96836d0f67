package replica

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/operation"
)

// delayedFetch is a fetch waiting for data (Kafka's DelayedFetch). It is
// built for every fetch: one that can be answered at once completes on
// its first try, before it is ever watched.
//
// Its fields are set before it is submitted and only read afterwards, by
// TryComplete and by OnComplete, which then fills the response: a
// TryComplete on another goroutine writes nothing it could race with.
type delayedFetch struct {
	operation.State
	m        *Manager
	r        Responder
	iso      storage.Isolation
	minBytes int
	maxBytes int
	byID     bool  // v13+: topics are named by id
	follower int32 // the follower fetching, -1 for a consumer
	resp     *kmsg.FetchResponse
	parts    []fetchPart // in request order
	failed   bool        // some partition failed to be read: answer at once
	reads    int         // partitions to read: those not set aside with an error
	// moved are the partitions whose high watermark, or low watermark,
	// this fetch, a follower's, moved: the caller completes what waits
	// on them.
	moved []*storage.Partition
}

// fetchPart is one partition of a fetch.
type fetchPart struct {
	p                *storage.Partition // nil when code is set: nothing to read
	epoch            int32              // the leader epoch it is read under
	code             int16              // an error found when the request was read
	offset           int64
	maxBytes         int
	topic, partition int // where its answer sits in resp
}

// Fetch answers a Fetch request through r: at once when it can (min_bytes
// readable, an error), else once it has waited in the Fetch purgatory for
// data, its deadline, a leadership change or its client going away.
// A follower's fetch moves the high watermark of the partitions it reads,
// and wakes what waits on them. It runs on the request's reader
// goroutine, and does not block.
//
// refused holds, by topic index in req, a code to answer that topic's
// partitions with instead of reading them (the broker's authorization:
// TOPIC_AUTHORIZATION_FAILED), 0 for those to read; nil refuses none. A
// refused topic is set aside as an unknown one is: it does not cut the
// wait for the others.
func (m *Manager) Fetch(r Responder, req *kmsg.FetchRequest, refused []int16) {
	f := m.newDelayedFetch(r, req, refused)
	for _, p := range f.moved {
		m.Wake(p)
	}
	if f.immediate() {
		f.answer()
		return
	}
	if _, err := m.fetches.TryCompleteElseWatchContext(r.Context(), f, millis(req.MaxWaitMillis), f.keys()...); err != nil {
		// Not taken (the broker is closing, or the client has gone):
		// answer with what there is.
		m.log.Debug("fetch not delayed", zap.Error(err))
		f.answer()
	}
}

// newDelayedFetch resolves the partitions req names and lays out the
// response, in request order, with the errors known already.
//
// Those errors are of two kinds, as in Kafka. A partition the broker does
// not know (unknown topic, topic id or partition) is set aside with its
// error, as Kafka's KafkaApis sets such partitions aside before its
// ReplicaManager reads the others: the fetch still waits for data on the
// partitions it can read, and answers at once only if there are none. A
// consumer fetching a topic that was just deleted, next to live ones,
// thus polls at its max_wait_ms rather than in a tight loop until its
// metadata catches up (kgo's TestIssue434 spun ~7000 fetches a second for
// 15s). A partition that exists but cannot be read as asked (a fenced
// leader epoch, not the leader, an invalid isolation level) answers the
// whole fetch at once, as Kafka's ReplicaManager does on a read error.
func (m *Manager) newDelayedFetch(r Responder, req *kmsg.FetchRequest, refused []int16) *delayedFetch {
	// Kafka caps a fetch's max_bytes with fetch.max.bytes, and its
	// min_bytes with the result.
	maxBytes := int(min(max(req.MaxBytes, 0), m.cfg.FetchMaxBytes))
	f := &delayedFetch{m: m, r: r, minBytes: min(int(req.MinBytes), maxBytes), maxBytes: maxBytes, byID: req.Version >= 13}
	f.resp = req.ResponseKind().(*kmsg.FetchResponse)
	if req.SessionEpoch > 0 {
		// An incremental fetch names a session, and the broker creates
		// none: Kafka's answer to a session it does not have.
		f.resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return f
	}
	replica, replicaEpoch := req.ReplicaID, int64(-1)
	if req.Version >= 15 {
		replica, replicaEpoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	f.follower = max(replica, -1)
	// A follower is who it says it is (KIP-903): a broker of the cluster
	// registered and unfenced in the metadata log, at the broker epoch it
	// gives (v15+). A fetch from a fenced, unregistered or restarted
	// replica, or one older than v15 (no broker epoch to check), moves
	// neither the high watermark nor the ISR.
	knownReplica := replica < 0 || m.member.FollowerCurrent(replica, replicaEpoch)
	var isoCode int16
	switch {
	case replica >= 0:
		f.iso = storage.ReadReplica // a follower reads up to the log end
	case req.IsolationLevel == 0:
		f.iso = storage.ReadUncommitted
	case req.IsolationLevel == 1:
		f.iso = storage.ReadCommitted
	default:
		isoCode = kerr.InvalidRequest.Code
	}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var (
			topic *storage.Topic
			terr  error
		)
		if f.byID {
			topic, terr = m.store.TopicByID(rt.TopicID)
		} else {
			topic, terr = m.store.Topic(rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark = -1
			sp.RecordBatches = []byte{}
			part := fetchPart{offset: rp.FetchOffset, maxBytes: int(max(rp.PartitionMaxBytes, 0)), topic: ti, partition: len(st.Partitions)}
			unknown := false // set aside: does not end the wait
			switch {
			case isoCode != 0:
				part.code = isoCode
			case ti < len(refused) && refused[ti] != 0:
				part.code = refused[ti]
				unknown = true
			case terr != nil:
				part.code = PartitionErrorCode(terr, f.byID)
				unknown = true
			default:
				p, err := topic.Partition(rp.Partition)
				switch {
				case err != nil:
					part.code = PartitionErrorCode(err, f.byID)
					unknown = true
				case m.Leads(p) != nil:
					part.code = kerr.NotLeaderForPartition.Code
				case replica >= 0 && (replica == m.member.Self() || !m.isReplica(p, replica) || !knownReplica):
					// Kafka answers a fetch from a broker that holds
					// no replica of the partition so; here also one
					// from a replica fenced, or at another epoch.
					part.code = kerr.NotLeaderForPartition.Code
				case replica >= 0:
					// A follower's fetch: its offset is its log end
					// (Kafka's updateFollowerFetchState), which may
					// move the high watermark.
					part.p = p
					part.code = EpochErrorCode(rp.CurrentLeaderEpoch, p.LeaderEpoch())
					// Its log start may raise the low watermark a
					// DeleteRecords waits for.
					if part.code == 0 && m.leaders.followerFetched(p, replica, rp.FetchOffset, rp.LogStartOffset, true) {
						f.moved = append(f.moved, p)
					}
				default:
					part.p = p
					part.code = EpochErrorCode(rp.CurrentLeaderEpoch, p.LeaderEpoch())
				}
			}
			if part.p != nil {
				state, _ := m.partitionState(part.p)
				part.epoch = state.LeaderEpoch
			}
			if part.code != 0 {
				sp.ErrorCode = part.code
				part.p = nil
				f.failed = f.failed || !unknown
			} else {
				f.reads++
			}
			st.Partitions = append(st.Partitions, sp)
			f.parts = append(f.parts, part)
		}
		f.resp.Topics = append(f.resp.Topics, st)
	}
	return f
}

// immediate reports whether f is answered without waiting: a session error,
// no partition to read (all unknown, or none asked for), or a partition
// that fails already (Kafka answers at once when reading a partition
// failed).
func (f *delayedFetch) immediate() bool {
	return f.resp.ErrorCode != 0 || f.reads == 0 || f.failed
}

// keys returns the partitions f waits on: those it reads.
func (f *delayedFetch) keys() []TP {
	keys := make([]TP, 0, f.reads)
	for _, part := range f.parts {
		if part.p != nil {
			keys = append(keys, keyOf(part.p))
		}
	}
	return keys
}

// TryComplete reports whether the fetch can be answered: min_bytes are
// readable, counting each partition up to its partition_max_bytes (Kafka's
// accumulated size), or a partition can no longer be read (deleted, its
// offset out of range: retention moved the log start past it, or this
// broker no longer leads it at the epoch the fetch began under, as Kafka's
// DelayedFetch completes when leadership moves).
//
// A partition the leader's replication throttle holds back from the
// follower does not count (Kafka's DelayedFetch skips it), so that a
// follower fetching only throttled partitions waits its max_wait_ms.
func (f *delayedFetch) TryComplete() bool {
	acc := 0
	for _, part := range f.parts {
		if part.p == nil {
			continue // set aside with its error
		}
		if !f.m.LeadsAt(part.p, part.epoch) {
			return true
		}
		n, err := part.p.Readable(part.offset, f.iso, part.maxBytes)
		if err != nil {
			return true
		}
		if f.listed(part) && f.m.leaderThrottled(part.p, f.follower) {
			continue // its bytes would not be sent (throttle.go)
		}
		acc += min(n, part.maxBytes)
		if acc >= f.minBytes {
			return true
		}
	}
	return acc >= f.minBytes
}

// listed reports whether part is a follower's fetch of a partition the
// leader's replication throttle lists (throttle.go); a consumer's never is.
func (f *delayedFetch) listed(part fetchPart) bool {
	return f.follower >= 0 && f.m.leaderListed(part.p)
}

// OnComplete reads the logs and answers, whatever completed the fetch: its
// bytes, its deadline, a deletion, the client going (the answer then goes
// nowhere) or the broker closing.
func (f *delayedFetch) OnComplete() { f.answer() }

func (f *delayedFetch) OnExpiration() {}

// answer reads each partition and responds. The response's max_bytes
// (capped by fetch.max.bytes) is shared in request order, and so is what
// is left of the memory budget (queued.max.request.bytes), which the
// records hold until written: a fetch answered while the budget is spent
// reads less. The first batch read is returned whatever its size (Kafka's
// minOneMessage), so that an oversized batch does not stall its consumer;
// a batch is at most its topic's max.message.bytes, so a response is at
// most fetch.max.bytes and one batch.
func (f *delayedFetch) answer() {
	room := f.r.Room(f.maxBytes)
	remaining, minOne, read := room, true, 0
	throttledBytes := 0 // sent of the partitions the leader throttle lists
	for _, part := range f.parts {
		if part.p == nil {
			continue // its error is in the response already
		}
		sp := &f.resp.Topics[part.topic].Partitions[part.partition]
		if !f.m.LeadsAt(part.p, part.epoch) {
			sp.ErrorCode = f.m.notLeadingCode(part.p, f.byID)
			continue
		}
		limit, one := min(part.maxBytes, remaining), minOne
		listed := f.listed(part)
		if listed && f.m.leaderThrottled(part.p, f.follower) {
			// No records, the offsets still (Kafka answers an
			// empty set): nothing is read past them.
			limit, one = 0, false
		}
		res, err := part.p.Read(part.offset, f.iso, limit, one)
		if err != nil {
			sp.ErrorCode = PartitionErrorCode(err, f.byID)
			continue
		}
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.LastStable, res.LogStart
		if f.iso == storage.ReadCommitted {
			// The aborted transactions among the batches returned, so
			// that the consumer drops their records (Kafka's
			// collectAbortedTransactions).
			sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(res.Aborted))
			for _, a := range res.Aborted {
				sp.AbortedTransactions = append(sp.AbortedTransactions,
					kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
			}
		}
		if len(res.Records) > 0 {
			sp.RecordBatches = res.Records
			minOne = false
			remaining = max(0, remaining-len(res.Records))
			read += len(res.Records)
			if listed {
				throttledBytes += len(res.Records)
			}
		}
	}
	// Recorded once read, in sync or not (Kafka's
	// sizeOfThrottledPartitions), before the answer goes.
	f.m.cfg.LeaderQuota.Record(throttledBytes)
	f.r.RespondHolding(f.resp, read) // past the room by the one batch, if need be
}
