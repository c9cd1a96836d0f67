package server

import (
	"errors"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Replication, as this broker does it (Kafka's, with the leaders the
// metadata log names, image.go):
//
//   - a produce to a partition's leader is appended to its log; with
//     acks=all it waits in the Produce purgatory under the partition until
//     the high watermark passes it (delayed_produce.go);
//   - each follower fetches from the leader with Fetch requests carrying
//     its replica id (replica.Fetcher). A follower's fetch with nothing
//     new waits in the leader's Fetch purgatory, and the append completes
//     it: the follower receives the batch within a round trip;
//   - the follower appends the batch, keeping the leader's offsets, and
//     its next fetch, from the offset after it, tells the leader it has
//     the batch (replica.Leaders). When every in-sync replica has it,
//     the high watermark moves, and wake completes the waiting produce
//     and the consumers' fetches waiting for it;
//   - the leader changes the ISR through the controller
//     (replica.Leaders, replica.AlterPartition): a follower that lags
//     leaves it, one that has caught up joins it, each an AlterPartition
//     checked against the partition epoch; a follower whose broker is
//     fenced leaves it at once, by the controller's own decision.

var (
	// errNotLeader is wrapped when this broker does not lead a partition
	// a client asked for (NOT_LEADER_OR_FOLLOWER).
	errNotLeader = errors.New("not the leader")
	// errNotEnoughReplicas is wrapped for an acks=all produce to a
	// partition whose ISR is below min.insync.replicas.
	errNotEnoughReplicas = errors.New("not enough in-sync replicas")
	// errNotController is wrapped for a request only the controller
	// serves (NOT_CONTROLLER).
	errNotController = errors.New("not the controller")
)

// wake checks again the fetches and produces waiting on p, after
// anything that can complete them: an append (fetches waiting for bytes;
// produces, when it moved the high watermark), the high watermark moving
// on a follower's fetch or an ISR shrink (produces waiting for acks=all,
// consumers' fetches, which read only below it), the partition deleted
// (both answered with an error now). It is called with no lock held, as
// CheckAndComplete must be.
func (s *Server) wake(p *storage.Partition) {
	key := tp{p.Topic().Name, p.Index()}
	s.fetches.CheckAndComplete(key)
	s.produces.CheckAndComplete(key)
}

// ReplicaInfo is what a broker holds of one partition: its placement,
// leader, leader epoch and ISR as the metadata log has them here, and its
// own replica's offsets.
type ReplicaInfo struct {
	Leader        int32
	LeaderEpoch   int32
	Replicas, ISR []int32
	LogStart      int64
	HighWatermark int64
	LogEnd        int64
	// LeaderEpochs is its replica's leader-epoch cache: where each
	// leader epoch starts in its log.
	LeaderEpochs []storage.EpochEntry
}

// Replica returns what this broker holds of topic's partition, for tests
// and tools that watch replication: a follower's log end, a leader's ISR.
func (s *Server) Replica(topic string, partition int32) (ReplicaInfo, error) {
	p, err := s.data.store.Partition(topic, partition)
	if err != nil {
		return ReplicaInfo{}, err
	}
	o, err := p.Offsets()
	if err != nil {
		return ReplicaInfo{}, err
	}
	st, _ := s.partitionState(p)
	return ReplicaInfo{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, Replicas: st.Replicas, ISR: st.ISR,
		LogStart: o.LogStart, HighWatermark: o.HighWatermark, LogEnd: o.LogEnd, LeaderEpochs: p.LeaderEpochs()}, nil
}
