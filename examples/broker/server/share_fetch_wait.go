package server

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
	"github.com/gopurgatory/purgatory/operation"
)

// delayedShareFetch is a share fetch waiting for records to acquire
// (Kafka's DelayedShareFetch). It is watched in the ShareFetch purgatory
// under two keys for each of its partitions: the share partition's, which
// a release, a lock expiry or an acknowledgement moving the start wakes,
// and the partition's, which an append, a high watermark moving or a
// leadership change wakes (replica.Manager.OnWake, a hook the first
// share fetch that waits installs: shareBroker.armWake). It acquires nothing
// until it completes: TryComplete only asks whether a partition has
// records to acquire (share.Partition.Acquirable), and OnComplete
// acquires and reads. Two fetches woken together may both complete, and
// the second find nothing left: it is answered empty, and its member
// fetches again, as Kafka's may be.
//
// Its fields are set before it is submitted and only read afterwards.
type delayedShareFetch struct {
	operation.State
	s          *Server
	r          *kafkanet.Request
	resp       *kmsg.ShareFetchResponse
	member     string
	maxRecords int
	mode       share.AcquireMode // KIP-1206: whether maxRecords is a hard limit
	lockFor    time.Duration
	// readCommitted is set for a group whose share.isolation.level is
	// read_committed (share_isolation.go).
	readCommitted bool
	parts         []shareFetchPart // in session order
	// ranges is the runs acquired of the partition answered last, its
	// array reused from partition to partition.
	ranges []share.Range
	// done is called once by answer and once when the request's
	// acknowledgements are durable; the second call responds.
	done func()
	// persisted holds the codes of the acknowledged partitions' writes,
	// in parts' order (persistAll's), set before the acknowledgements'
	// call of done and read by respond only.
	persisted []int16
	// answered holds the partitions' answers answer made, in parts'
	// order, for respond.
	answered []kmsg.ShareFetchResponseTopicPartition
}

// shareFetchPart is one partition of a share fetch.
type shareFetchPart struct {
	tp    shareTP
	p     *storage.Partition // nil when code is set
	sp    *share.Partition
	epoch int32 // the leader epoch it is read under
	code  int16 // an error found when the request was read
	// acked is set when the request acknowledged records of the partition:
	// it is answered then, with ackCode (else its write's code), even
	// without records.
	acked   bool
	ackCode int16
	// left is set for a partition the request named and forgot: out of
	// the session, answered with its acknowledgements' result alone.
	left bool
}

// immediate reports whether the fetch is answered without waiting: no
// partition it may wait on.
func (f *delayedShareFetch) immediate() bool {
	for i := range f.parts {
		if f.parts[i].p != nil {
			return false
		}
	}
	return true
}

// keys are the fetch's watch keys: each partition's share partition and
// the partition itself.
func (f *delayedShareFetch) keys() []shareWaitKey {
	ks := make([]shareWaitKey, 0, 2*len(f.parts))
	for _, part := range f.parts {
		if part.p == nil {
			continue
		}
		k := part.sp.Key()
		ks = append(ks, shareWaitKey{Group: k.Group, Topic: k.Topic, Partition: k.Partition},
			shareWaitKey{Topic: k.Topic, Partition: k.Partition})
	}
	return ks
}

// TryComplete reports whether a partition has records to acquire, or
// can no longer be read here.
func (f *delayedShareFetch) TryComplete() bool {
	for _, part := range f.parts {
		if part.p == nil {
			continue
		}
		if !f.s.replicas.LeadsAt(part.p, part.epoch) {
			return true
		}
		offs, err := part.p.Offsets()
		if err != nil {
			return true
		}
		if _, end := f.readLimit(offs); part.sp.Acquirable(end) {
			return true
		}
	}
	return false
}

func (f *delayedShareFetch) OnComplete() { f.answer() }

// answer acquires up to max_records records, partition by partition in
// session order, and reads the batches that hold them; the response goes
// once the request's acknowledgements are durable too (respond).
func (f *delayedShareFetch) answer() {
	remaining := f.maxRecords
	read := 0
	f.answered = make([]kmsg.ShareFetchResponseTopicPartition, len(f.parts))
	for i := range f.parts {
		part, rp := &f.parts[i], &f.answered[i]
		*rp = kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode = part.tp.partition, part.code
		if part.p != nil {
			f.acquire(part, rp, &remaining, &read)
		}
	}
	f.done()
}

// respond answers the fetch. A partition is in the answer when it has
// records, an error, or the request's acknowledgements' result (an
// incremental session's answer leaves the others out).
func (f *delayedShareFetch) respond() {
	acked := 0
	for i := range f.parts {
		part, rp := &f.parts[i], f.answered[i]
		if part.acked {
			rp.AcknowledgeErrorCode = part.ackCode
			if rp.AcknowledgeErrorCode == 0 {
				rp.AcknowledgeErrorCode = f.persisted[acked]
			}
			acked++
		}
		if rp.ErrorCode != 0 {
			var ep describedBroker
			var hinted bool
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch, ep, hinted = f.s.leaderHint(f.r, part.tp, rp.ErrorCode)
			if hinted && !slices.ContainsFunc(f.resp.NodeEndpoints, func(e kmsg.ShareFetchResponseNodeEndpoint) bool { return e.NodeID == ep.id }) {
				f.resp.NodeEndpoints = append(f.resp.NodeEndpoints, kmsg.ShareFetchResponseNodeEndpoint{NodeID: ep.id, Host: ep.host, Port: ep.port})
			}
		}
		if rp.ErrorCode != 0 || part.acked || len(rp.AcquiredRecords) > 0 {
			addSharePartition(f.resp, part.tp.topic, rp)
		}
	}
	f.r.Respond(f.resp)
}

// acquire acquires records of part for the member, up to *remaining, and
// puts them and the batches that hold them in rp.
func (f *delayedShareFetch) acquire(part *shareFetchPart, rp *kmsg.ShareFetchResponseTopicPartition, remaining, read *int) {
	if !f.s.replicas.LeadsAt(part.p, part.epoch) {
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		return
	}
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = f.s.cfg.NodeID, part.epoch
	if *remaining <= 0 {
		return
	}
	offs, err := part.p.Offsets()
	if err != nil {
		rp.ErrorCode = errorCode(err)
		return
	}
	iso, end := f.readLimit(offs)
	f.ranges = part.sp.AcquireAppend(f.ranges[:0], f.member, *remaining, f.mode, offs.LogStart, end, f.lockFor,
		part.p.BatchEnd)
	ranges := f.ranges
	if len(ranges) == 0 {
		return
	}
	res, err := part.p.ReadBatches(ranges[0].First, ranges[len(ranges)-1].Last, iso)
	records := res.Records
	if err != nil {
		// The records cannot be handed out: give them back at once,
		// delivery counted, rather than after the lock's duration.
		for _, rg := range ranges {
			_ = part.sp.Acknowledge(f.member, rg.First, rg.Last, []int8{int8(share.AckRelease)}, f.lockFor)
		}
		rp.ErrorCode = errorCode(err)
		return
	}
	if len(res.Aborted) > 0 {
		// Read committed: the records of aborted transactions are
		// archived, and their new state written, not handed out.
		var archived bool
		if ranges, archived = archiveAborted(part.sp, f.member, ranges, records, res.Aborted); archived {
			part.sp.Persist(nil)
		}
		if len(ranges) == 0 {
			return
		}
	}
	for _, rg := range ranges {
		rp.AcquiredRecords = append(rp.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
			FirstOffset: rg.First, LastOffset: rg.Last, DeliveryCount: rg.DeliveryCount})
		*remaining -= int(rg.Last - rg.First + 1)
	}
	rp.Records = records
	*read += len(records)
}

// addSharePartition puts rp in resp under its topic, the topic's entry
// made on its first partition.
func addSharePartition(resp *kmsg.ShareFetchResponse, topic [16]byte, rp kmsg.ShareFetchResponseTopicPartition) {
	for i := range resp.Topics {
		if resp.Topics[i].TopicID == topic {
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
			return
		}
	}
	t := kmsg.NewShareFetchResponseTopic()
	t.TopicID, t.Partitions = topic, []kmsg.ShareFetchResponseTopicPartition{rp}
	resp.Topics = append(resp.Topics, t)
}
