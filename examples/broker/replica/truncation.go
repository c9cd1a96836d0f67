package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// ListOffsets' special timestamps, as the follower asks its leader.
const (
	listLatest   = -1 // the log end
	listEarliest = -2 // the log start
)

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
func (fe *Fetcher) reconcile(ctx context.Context, leader int32, p *storage.Partition) error {
	// Each round that does not finish cuts at least one epoch off p, so
	// there are at most as many rounds as p has epochs, plus the last.
	for round := len(p.LeaderEpochs()) + 1; round > 0; round-- {
		latest, ok := p.LatestLeaderEpoch()
		if !ok {
			break // nothing with an epoch to cut: an empty log
		}
		epoch, end, err := fe.offsetForLeaderEpoch(ctx, leader, p, latest)
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
			if to, err = fe.listOffset(ctx, leader, p, listLatest); err != nil {
				return err
			}
		} else {
			to, done = truncationPoint(epoch, end, func(e int32) (int32, int64) {
				le, lend, _ := p.EndOffsetForEpoch(e) // a deleted partition fails TruncateTo next
				return le, lend
			})
		}
		if to < o.LogEnd {
			fe.log.Info("truncating by leader epoch", zap.String("topic", p.Topic().Name), zap.Int32("partition", p.Index()),
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
	start, err := fe.listOffset(ctx, leader, p, listEarliest)
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
func (fe *Fetcher) offsetForLeaderEpoch(ctx context.Context, leader int32, p *storage.Partition, epoch int32) (int32, int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = fe.cfg.Self
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = p.Topic().Name
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.Index(), p.LeaderEpoch(), epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := fe.env.Request(ctx, leader, req)
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
func (fe *Fetcher) listOffset(ctx context.Context, leader int32, p *storage.Partition, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = fe.cfg.Self
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = p.Topic().Name
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p.Index(), ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := fe.env.Request(ctx, leader, req)
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
