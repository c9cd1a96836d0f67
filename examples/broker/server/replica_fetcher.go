package server

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// fetchFrom is the replica fetcher for the partitions broker leader leads
// and this broker follows (Kafka's ReplicaFetcherThread): it fetches them
// from their log ends with this broker's replica id, appends what comes
// back with the leader's offsets, and takes the leader's high watermark.
// Its next fetch tells the leader what it has.
//
// The leader is the one the metadata log names, at a leader epoch: before
// a partition is first fetched at an epoch, and whenever the leader
// answers OFFSET_OUT_OF_RANGE or a batch does not follow on, the follower
// truncates its log by leader epoch to where it agrees with the leader's
// (reconcile, KIP-101 and KIP-279), so that records a former leader wrote
// and its successor never had are cut, whatever the two logs' lengths.
func (ps *peers) fetchFrom(leader int32) {
	reconciled := make(map[*storage.Partition]int32) // the leader epoch each was reconciled at
	for ps.ctx.Err() == nil {
		var parts []*storage.Partition
		for _, p := range ps.s.followedFrom(leader) {
			epoch := p.LeaderEpoch()
			if at, ok := reconciled[p]; !ok || at != epoch {
				if err := ps.reconcile(leader, p); err != nil {
					ps.s.log.Debug("reconcile with leader", zap.Int32("leader", leader), zap.String("topic", p.Topic().Name),
						zap.Int32("partition", p.Index()), zap.Error(err))
					continue
				}
				reconciled[p] = epoch
			}
			parts = append(parts, p)
		}
		for p := range reconciled {
			if p.Deleted() {
				delete(reconciled, p)
			}
		}
		if len(parts) == 0 {
			if !ps.sleep(ps.s.cfg.ReplicaFetchBackoff) {
				return
			}
			continue
		}
		progressed, err := ps.fetchOnce(leader, parts, reconciled)
		if err != nil && ps.ctx.Err() == nil {
			ps.s.log.Debug("replica fetch", zap.Int32("leader", leader), zap.Error(err))
		}
		if (err != nil || !progressed) && !ps.sleep(ps.s.cfg.ReplicaFetchBackoff) {
			return
		}
	}
}

// followedFrom returns the partitions leader leads of which this broker
// holds a replica.
func (s *Server) followedFrom(leader int32) []*storage.Partition {
	var out []*storage.Partition
	im := s.image()
	for _, t := range s.data.store.Topics() {
		if t.ReplicationFactor <= 1 {
			continue
		}
		mt, err := im.TopicByID(metadata.TopicID(t.ID))
		if err != nil {
			continue
		}
		for _, p := range t.Partitions {
			if int(p.Index()) >= len(mt.Partitions) {
				continue
			}
			st := mt.Partitions[p.Index()]
			if st.Leader == leader && slices.Contains(st.Replicas, s.cl.self) {
				out = append(out, p)
			}
		}
	}
	return out
}

// fetchOnce sends one replica fetch for parts and applies the answer. It
// reports whether the fetcher may go straight on: some batches came, or no
// partition failed (a fetch that waited and came back empty counts). A
// fetch answered at once with errors and nothing else is not progress, so
// that the fetcher backs off rather than spin on a partition the leader
// refuses.
func (ps *peers) fetchOnce(leader int32, parts []*storage.Partition, reconciled map[*storage.Partition]int32) (bool, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = ps.s.cl.self
	req.ReplicaState.ID, req.ReplicaState.Epoch = ps.s.cl.self, ps.epoch
	req.MaxWaitMillis = int32(ps.s.cfg.ReplicaFetchWaitMax.Milliseconds())
	req.MinBytes = ps.s.cfg.ReplicaFetchMinBytes
	req.MaxBytes = 10 << 20 // Kafka's replica.fetch.response.max.bytes
	req.SessionID, req.SessionEpoch = 0, -1
	byName := make(map[tp]*storage.Partition, len(parts))
	for _, p := range parts {
		o, err := p.Offsets()
		if err != nil {
			continue
		}
		i := slices.IndexFunc(req.Topics, func(t kmsg.FetchRequestTopic) bool { return t.Topic == p.Topic().Name })
		if i < 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.Topic().Name, p.Topic().ID
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset = p.Index(), o.LogEnd
		rp.CurrentLeaderEpoch = p.LeaderEpoch() // a leader behind this epoch answers UNKNOWN_LEADER_EPOCH
		rp.LogStartOffset = o.LogStart
		rp.PartitionMaxBytes = ps.s.cfg.ReplicaFetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		byName[tp{p.Topic().Name, p.Index()}] = p
	}
	resp, err := ps.request(ps.ctx, leader, req)
	if err != nil {
		return false, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 {
		return false, kerr.ErrorForCode(fr.ErrorCode)
	}
	appended, failed := false, false
	for _, rt := range fr.Topics {
		name := rt.Topic
		if t, err := ps.s.data.store.TopicByID(storage.TopicID(rt.TopicID)); name == "" && err == nil {
			name = t.Name
		}
		for _, rp := range rt.Partitions {
			p := byName[tp{name, rp.Partition}]
			if p == nil {
				continue
			}
			if at, ok := reconciled[p]; !ok || at != p.LeaderEpoch() {
				// Leadership moved while the fetch was in flight: its
				// batches are of a log this replica no longer follows
				// at that epoch (it may even lead now). It reconciles
				// with the new leader first, as Kafka's fetcher drops a
				// response whose partition state changed meanwhile.
				delete(reconciled, p)
				continue
			}
			switch rp.ErrorCode {
			case 0:
				appended = appended || len(rp.RecordBatches) > 0
				if _, err := p.AppendReplica(rp.RecordBatches); err != nil {
					delete(reconciled, p)
					ps.s.log.Warn("appending a leader's batches", zap.String("topic", name), zap.Int32("partition", rp.Partition), zap.Error(err))
				}
				p.SetHighWatermark(rp.HighWatermark)
				// The leader's log start, never past this replica's high
				// watermark, as Kafka's follower takes it: what the leader
				// dropped (retention, a compacted offsets partition) goes
				// here too.
				if _, err := p.AdvanceLogStart(rp.LogStartOffset); err != nil {
					ps.s.log.Warn("following a leader's log start", zap.String("topic", name), zap.Int32("partition", rp.Partition), zap.Error(err))
				}
			case kerr.OffsetOutOfRange.Code:
				delete(reconciled, p)
				failed = true
			default:
				failed = true
			}
		}
	}
	return appended || !failed, nil
}

// reconcile truncates p to where its log agrees with its leader's, as
// Kafka's AbstractFetcherThread does before fetching at a new leader
// epoch. It asks the leader OffsetForLeaderEpoch for its latest epoch:
//
//   - the leader holds that epoch: p is cut to the smaller of the two
//     replicas' end offsets for it (KIP-101);
//   - the leader answers a smaller epoch, the largest it holds at or below
//     it (KIP-279): if p holds that epoch too, it is cut to the smaller of
//     the two end offsets for it; if not, p is cut to where its own
//     epochs at or below it end, and the leader is asked again about the
//     latest epoch left;
//   - the leader cannot place it (-1): p is cut to the leader's log end,
//     as truncation went before epochs.
//
// Then, if p's log ends before the leader's log start, p starts again
// empty there (Kafka's truncateFullyAndStartAt, as after an
// OFFSET_OUT_OF_RANGE).
func (ps *peers) reconcile(leader int32, p *storage.Partition) error {
	// Each round that does not finish cuts at least one epoch off p, so
	// there are at most as many rounds as p has epochs, plus the last.
	for round := len(p.LeaderEpochs()) + 1; round > 0; round-- {
		latest, ok := p.LatestLeaderEpoch()
		if !ok {
			break // nothing with an epoch to cut: an empty log
		}
		epoch, end, err := ps.offsetForLeaderEpoch(leader, p, latest)
		if err != nil {
			return err
		}
		o, err := p.Offsets()
		if err != nil {
			return err
		}
		var to int64
		done := true
		if end == storage.UndefinedEpochOffset {
			if to, err = ps.listOffset(leader, p, listLatest); err != nil {
				return err
			}
		} else {
			to, done = truncationPoint(epoch, end, func(e int32) (int32, int64) {
				le, lend, _ := p.EndOffsetForEpoch(e) // a deleted partition fails TruncateTo next
				return le, lend
			})
		}
		if to < o.LogEnd {
			ps.s.log.Info("truncating by leader epoch", zap.String("topic", p.Topic().Name), zap.Int32("partition", p.Index()),
				zap.Int32("leader", leader), zap.Int32("epoch_asked", latest), zap.Int32("leader_epoch", epoch),
				zap.Int64("leader_end_offset", end), zap.Int64("from", o.LogEnd), zap.Int64("to", to))
		}
		// At the log end too: an epoch this broker recorded when it
		// led, with no batch of it, goes, so the next round asks about
		// the epoch before it.
		if err := p.TruncateTo(min(to, o.LogEnd)); err != nil {
			return err
		}
		if done {
			break
		}
	}
	start, err := ps.listOffset(leader, p, listEarliest)
	if err != nil {
		return err
	}
	o, err := p.Offsets()
	if err != nil {
		return err
	}
	if o.LogEnd < start {
		return p.TruncateFullyAndStartAt(start)
	}
	return nil
}

// truncationPoint is where a follower cuts its log, given its leader's
// answer to OffsetForLeaderEpoch (epoch, end; end defined) and local, the
// follower's own end offset for an epoch (its EndOffsetForEpoch); done is
// false when the follower must ask again after cutting there (KIP-279:
// it lacks the epoch the leader answered). The caller cuts only below its
// log end (Kafka's min with the log end offset).
func truncationPoint(epoch int32, end int64, local func(int32) (int32, int64)) (to int64, done bool) {
	if epoch == storage.UndefinedEpoch {
		return end, true // a leader without epochs: its end offset
	}
	localEpoch, localEnd := local(epoch)
	switch {
	case localEnd == storage.UndefinedEpochOffset:
		return end, true // no epoch at or below the leader's here
	case localEpoch != epoch:
		// The follower lacks the leader's epoch: cut what it wrote
		// after its own epochs below it, and ask again.
		return localEnd, false
	}
	return min(localEnd, end), true
}

// offsetForLeaderEpoch asks leader, as a replica at p's current leader
// epoch, where epoch ends in its log.
func (ps *peers) offsetForLeaderEpoch(leader int32, p *storage.Partition, epoch int32) (int32, int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = ps.s.cl.self
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = p.Topic().Name
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.Index(), p.LeaderEpoch(), epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := ps.request(ps.ctx, leader, req)
	if err != nil {
		return 0, 0, err
	}
	or := resp.(*kmsg.OffsetForLeaderEpochResponse)
	if len(or.Topics) != 1 || len(or.Topics[0].Partitions) != 1 {
		return 0, 0, errors.New("offset for leader epoch: the answer does not match the request")
	}
	sp := or.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
		return 0, 0, fmt.Errorf("offset for leader epoch %d of %s-%d at broker %d: %w", epoch, p.Topic().Name, p.Index(), leader, err)
	}
	return sp.LeaderEpoch, sp.EndOffset, nil
}

// listOffset asks leader, as a replica, for p's offset at ts (latest: the
// log end; earliest: the log start).
func (ps *peers) listOffset(leader int32, p *storage.Partition, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = ps.s.cl.self
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = p.Topic().Name
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p.Index(), ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := ps.request(ps.ctx, leader, req)
	if err != nil {
		return 0, err
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return 0, errors.New("list offsets: the answer does not match the request")
	}
	sp := lr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
		return 0, fmt.Errorf("list offsets of %s-%d at broker %d: %w", p.Topic().Name, p.Index(), leader, err)
	}
	return sp.Offset, nil
}
