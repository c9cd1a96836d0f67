package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/broker/txn"
)

// This file wires the transaction coordinator (package txn) to the
// broker, on the coordinator runtime, and writes its markers: the API
// files 22 and 24-28, 61, 65 and 66 translate its requests and answers.
//
// The marker flow (Kafka's TransactionMarkerChannelManager): once a
// transaction's PrepareCommit or PrepareAbort is durable in
// __transaction_state, its coordinator hands the markers to markerWriter,
// which groups the transaction's partitions by leader. It appends those
// this broker leads itself (appendMarkers, what a WriteTxnMarkers request
// does here) and sends each other leader one WriteTxnMarkers request. Each
// leader appends a control batch per partition, acks=all, and answers once
// every marker is replicated, waiting in its Produce purgatory as an
// acks=all produce does; a marker on a __consumer_offsets partition then
// makes the group's transactional offsets committed or drops them
// (group.Coordinator.CompleteTxn). The coordinator retries what failed and
// writes CompleteCommit or CompleteAbort once every partition has its
// marker.

// newTxnCoordinator builds the transaction coordinator from the broker's
// configs, hosted by s's runtime on __transaction_state, which it returns
// too.
func (s *Server) newTxnCoordinator() (*txn.Coordinator, *coordinator.Topic, error) {
	cfg := s.cfg
	offsetsPartitions := cfg.OffsetsTopicPartitions
	return txn.Host(s.coords, txn.ServiceConfig{
		Partitions: cfg.TransactionTopicPartitions, ReplicationFactor: cfg.TransactionTopicRF,
		MinISR: cfg.TransactionTopicMinISR, AppendTimeout: cfg.OffsetsCommitTimeout,
		CompactionDeadRecords: cfg.OffsetsCompactionDeadRecords,
	}, txn.Config{
		Markers:        markerWriter{s},
		NextProducerID: s.data.producerIDs.nextID,
		OffsetsPartition: func(group string) int32 {
			n := int(offsetsPartitions)
			if t, err := s.image().Topic(offsetsTopic); err == nil {
				n = len(t.Partitions)
			}
			return coordinator.PartitionFor(group, n)
		},
		MaxTimeout:     cfg.TransactionMaxTimeout,
		IDExpiration:   cfg.TransactionalIDExpiry,
		CompletionWait: cfg.TransactionCompletionWait,
		Registerer:     s.reg,
		Logger:         s.log.Named("txn"),
	})
}

// markerWriter is the transaction coordinator's MarkerWriter: it writes
// markers to the partitions this broker leads itself, and sends the other
// leaders WriteTxnMarkers.
type markerWriter struct{ s *Server }

var _ txn.MarkerWriter = markerWriter{}

// WriteMarkers groups parts by their leader in the image now and writes
// each group's markers; done gets every partition's result once all are
// known. A partition whose topic is gone is txn.ErrPartitionGone; one
// without a leader, or whose leader cannot be reached, a retriable error.
func (w markerWriter) WriteMarkers(m txn.Marker, parts []txn.TopicPartition, done func(map[txn.TopicPartition]error)) {
	s := w.s
	im := s.image()
	results := make(map[txn.TopicPartition]error, len(parts))
	byLeader := make(map[int32][]txn.TopicPartition)
	for _, tp := range parts {
		t, err := im.Topic(tp.Topic)
		switch {
		case err != nil:
			results[tp] = fmt.Errorf("%w: %s: %v", txn.ErrPartitionGone, tp.Topic, err)
		case tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions):
			results[tp] = fmt.Errorf("%w: %s-%d", txn.ErrPartitionGone, tp.Topic, tp.Partition)
		case t.Partitions[tp.Partition].Offline():
			results[tp] = fmt.Errorf("%w: %s-%d has no leader", kerr.NotLeaderForPartition, tp.Topic, tp.Partition)
		default:
			leader := t.Partitions[tp.Partition].Leader
			byLeader[leader] = append(byLeader[leader], tp)
		}
	}
	if len(byLeader) == 0 {
		done(results)
		return
	}
	var mu sync.Mutex
	left := len(byLeader)
	merge := func(got map[txn.TopicPartition]error) {
		mu.Lock()
		for tp, err := range got {
			results[tp] = err
		}
		left--
		last := left == 0
		mu.Unlock()
		if last {
			done(results)
		}
	}
	self := s.member.Self()
	for leader, tps := range byLeader {
		if leader == self {
			s.appendMarkers(context.Background(), m, tps, merge)
			continue
		}
		s.member.Go(func(ctx context.Context) { merge(w.send(ctx, leader, m, tps)) })
	}
}

// send sends leader a WriteTxnMarkers request for tps and returns each
// partition's result.
func (w markerWriter) send(ctx context.Context, leader int32, m txn.Marker, tps []txn.TopicPartition) map[txn.TopicPartition]error {
	s := w.s
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	byTopic := make(map[string]int)
	for _, tp := range tps {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(rm.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic = tp.Topic
			rm.Topics = append(rm.Topics, rt)
		}
		rm.Topics[i].Partitions = append(rm.Topics[i].Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, rm)
	out := make(map[txn.TopicPartition]error, len(tps))
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TransactionMarkerTimeout)
	defer cancel()
	resp, err := s.member.RequestOn(ctx, cluster.Markers, leader, req) // a connection of its own: see cluster.Channel
	if err == nil && len(resp.(*kmsg.WriteTxnMarkersResponse).Markers) != 1 {
		err = errors.New("WriteTxnMarkers answered without its marker")
	}
	if err != nil {
		for _, tp := range tps {
			out[tp] = fmt.Errorf("WriteTxnMarkers to broker %d: %w", leader, err)
		}
		return out
	}
	for _, rt := range resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics {
		for _, rp := range rt.Partitions {
			tp := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				out[tp] = markerError(s, tp, err)
			} else {
				out[tp] = nil
			}
		}
	}
	for _, tp := range tps {
		if _, ok := out[tp]; !ok {
			out[tp] = fmt.Errorf("broker %d did not answer for %s-%d", leader, tp.Topic, tp.Partition)
		}
	}
	return out
}

// markerError is err, a partition's error writing a marker, as the
// coordinator takes it: txn.ErrPartitionGone if its topic is gone from
// the image (a leader answering UNKNOWN_TOPIC_OR_PARTITION may only be
// behind the metadata log), else err, which it retries.
func markerError(s *Server, tp txn.TopicPartition, err error) error {
	if err == nil {
		return nil
	}
	t, terr := s.image().Topic(tp.Topic)
	if terr != nil || int(tp.Partition) >= len(t.Partitions) {
		return fmt.Errorf("%w: %s-%d: %w", txn.ErrPartitionGone, tp.Topic, tp.Partition, err)
	}
	return err
}

// appendMarkers appends m to each of tps that this broker leads, acks=all,
// and calls done once with each partition's result when every marker is
// replicated (or failed, or the wait timed out). A marker appended to a
// __consumer_offsets partition completes the group's transactional offsets
// once replicated, as Kafka's KafkaApis does after its append.
func (s *Server) appendMarkers(ctx context.Context, m txn.Marker, tps []txn.TopicPartition, done func(map[txn.TopicPartition]error)) {
	results := make(map[txn.TopicPartition]error, len(tps))
	var (
		waits    []replica.ProduceWait
		waitedTP []txn.TopicPartition
	)
	mk := storage.Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Commit}
	for _, tp := range tps {
		p, err := s.data.store.Partition(tp.Topic, tp.Partition)
		if err == nil && tp.Topic == offsetsTopic && s.replicas.Leads(p) == nil && !s.offsets.Loaded(tp.Partition) {
			// Led here, still loading: a marker appended now could
			// fall between the load's replay and the groups it hands
			// over, and the group coordinator would never complete
			// the transaction's offsets. Its coordinator retries.
			err = fmt.Errorf("%w: %s-%d", kerr.CoordinatorLoadInProgress, tp.Topic, tp.Partition)
		}
		if err == nil {
			var w replica.ProduceWait
			if w, err = s.replicas.AppendMarker(p, mk); err == nil {
				waits = append(waits, w)
				waitedTP = append(waitedTP, tp)
				continue
			}
		}
		results[tp] = markerError(s, tp, err)
	}
	s.replicas.AwaitAll(ctx, waits, s.cfg.TransactionMarkerTimeout, func(errs []error) {
		for i, err := range errs {
			tp := waitedTP[i]
			results[tp] = markerError(s, tp, err)
			if err == nil && tp.Topic == offsetsTopic {
				s.completeGroupTxn(tp.Partition, m)
			}
		}
		done(results)
	})
}

// fencedCode is code as a client of version sees it: PRODUCER_FENCED came
// with KIP-588 (InitProducerId v4, AddPartitionsToTxn, AddOffsetsToTxn and
// EndTxn v2, TxnOffsetCommit v3), and older versions get
// INVALID_PRODUCER_EPOCH, as Kafka's KafkaApis answers them.
func fencedCode(code, version, since int16) int16 {
	if code == kerr.ProducerFenced.Code && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// completeGroupTxn makes the transactional offsets that m's producer
// committed to the groups of partition idx of __consumer_offsets
// committed, or drops them (group.Coordinator.CompleteTxn), once its
// marker there is replicated.
func (s *Server) completeGroupTxn(idx int32, m txn.Marker) {
	t, err := s.image().Topic(offsetsTopic)
	if err != nil {
		return // deleted meanwhile: its groups went with it
	}
	n := len(t.Partitions)
	s.groups.CompleteTxn(func(group string) bool { return coordinator.PartitionFor(group, n) == idx }, m.ProducerID, m.Commit)
}
