package server

// WriteTxnMarkers: v0-v1.
//
// Inter-broker: a transaction coordinator asks the leader of each
// partition of an ending transaction to append its commit or abort marker
// (a control batch with the producer's id and epoch and the coordinator's
// epoch). Each marker is appended with acks=all and the request is
// answered once every marker is below its partition's high watermark, or
// failed, or marker.timeout passed (REQUEST_TIMED_OUT, retried by the
// coordinator): the waits are one operation in the Produce purgatory,
// keyed by the partitions. Per partition: NOT_LEADER_OR_FOLLOWER where this
// broker does not lead it, UNKNOWN_TOPIC_OR_PARTITION where it does not
// exist, INVALID_PRODUCER_EPOCH for a marker older than the producer's
// epoch, TRANSACTION_COORDINATOR_FENCED for a coordinator epoch older than
// the last marker's, NOT_ENOUGH_REPLICAS as an acks=all produce.
// A marker on a __consumer_offsets partition completes the group's
// transactional offset commits (see txns.go). A transaction version 2
// marker needs nothing more: it carries the bumped epoch, which the
// partition takes as a newer epoch (package storage). v2, whose markers
// say their transaction version (Kafka 4.1 checks a version 2 marker's
// epoch more strictly with it), is not needed between this broker's
// coordinators and leaders, and is not served.
// Authorization (authz.go): CLUSTER_ACTION on the cluster, the brokers',
// else CLUSTER_AUTHORIZATION_FAILED for every partition.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/txn"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.WriteTxnMarkers, 0, 1, (*Server).handleWriteTxnMarkers) }

func (s *Server) handleWriteTxnMarkers(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	if len(req.Markers) == 0 {
		r.Respond(resp)
		return
	}
	var mu sync.Mutex
	left := len(req.Markers)
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	for i := range req.Markers {
		rm := &req.Markers[i]
		m := txn.Marker{ProducerID: rm.ProducerID, ProducerEpoch: rm.ProducerEpoch,
			CoordinatorEpoch: rm.CoordinatorEpoch, Commit: rm.Committed}
		var tps []txn.TopicPartition
		for _, rt := range rm.Topics {
			for _, p := range rt.Partitions {
				tps = append(tps, txn.TopicPartition{Topic: rt.Topic, Partition: p})
			}
		}
		s.appendMarkers(r.Context(), m, tps, func(results map[txn.TopicPartition]error) {
			sm := kmsg.NewWriteTxnMarkersResponseMarker()
			sm.ProducerID = rm.ProducerID
			for _, rt := range rm.Topics {
				st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				st.Topic = rt.Topic
				for _, p := range rt.Partitions {
					sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					sp.Partition = p
					sp.ErrorCode = replica.ErrorCode(results[txn.TopicPartition{Topic: rt.Topic, Partition: p}])
					st.Partitions = append(st.Partitions, sp)
				}
				sm.Topics = append(sm.Topics, st)
			}
			mu.Lock()
			resp.Markers[i] = sm
			left--
			last := left == 0
			mu.Unlock()
			if last {
				r.Respond(resp)
			}
		})
	}
}
