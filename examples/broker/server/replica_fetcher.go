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
// truncates its log to what the leader has (reconcile). Truncation is by
// log end, not yet by leader epoch (OffsetForLeaderEpoch), so a log that
// diverged at the same length cannot be told apart; a clean election
// (the new leader was in the ISR, so it holds every acknowledged record)
// is what keeps followers right.
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
			switch rp.ErrorCode {
			case 0:
				appended = appended || len(rp.RecordBatches) > 0
				if _, err := p.AppendReplica(rp.RecordBatches); err != nil {
					delete(reconciled, p)
					ps.s.log.Warn("appending a leader's batches", zap.String("topic", name), zap.Int32("partition", rp.Partition), zap.Error(err))
				}
				p.SetHighWatermark(rp.HighWatermark)
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

// reconcile truncates p to what its leader has: to the leader's log end
// if this replica has more, or to nothing starting at the leader's log
// start if this replica ends before it (Kafka's truncateFullyAndStartAt).
func (ps *peers) reconcile(leader int32, p *storage.Partition) error {
	end, err := ps.listOffset(leader, p, listLatest)
	if err != nil {
		return err
	}
	start, err := ps.listOffset(leader, p, listEarliest)
	if err != nil {
		return err
	}
	o, err := p.Offsets()
	if err != nil {
		return err
	}
	switch {
	case o.LogEnd > end:
		ps.s.log.Info("truncating to the leader's log end", zap.String("topic", p.Topic().Name),
			zap.Int32("partition", p.Index()), zap.Int64("from", o.LogEnd), zap.Int64("to", end))
		return p.TruncateTo(end)
	case o.LogEnd < start:
		return p.TruncateFullyAndStartAt(start)
	}
	return nil
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
