package server

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Replication, as this broker does it (Kafka's, with static leaders):
//
//   - a produce to a partition's leader is appended to its log; with
//     acks=all it waits in the Produce purgatory under the partition until
//     the high watermark passes it (delayed_produce.go);
//   - each follower fetches from the leader with Fetch requests carrying
//     its replica id (replica_fetcher.go). A follower's fetch with nothing
//     new waits in the leader's Fetch purgatory, and the append completes
//     it: the follower receives the batch within a round trip;
//   - the follower appends the batch, keeping the leader's offsets, and
//     its next fetch, from the offset after it, tells the leader it has
//     the batch (leader_replicas.go). When every in-sync replica has it,
//     the high watermark moves, and wake completes the waiting produce
//     and the consumers' fetches waiting for it.

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

// replicasOf returns p's replicas; the first leads it.
func (s *Server) replicasOf(p *storage.Partition) []int32 {
	return s.cl.replicasOf(p.Index(), p.Topic().ReplicationFactor)
}

// leads returns nil if this broker leads p, else an error wrapping
// errNotLeader.
func (s *Server) leads(p *storage.Partition) error {
	if l := s.cl.leaderOf(p.Index()); l != s.cl.self {
		return fmt.Errorf("%w: %s-%d is led by broker %d", errNotLeader, p.Topic().Name, p.Index(), l)
	}
	return nil
}

// isReplica reports whether replica holds a replica of p.
func (s *Server) isReplica(p *storage.Partition, replica int32) bool {
	return slices.Contains(s.replicasOf(p), replica)
}

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

// isr returns p's in-sync replicas as this broker knows them: its own
// record for a partition it leads with followers, else what p's leader
// said in its last metadata (peers.go), else every replica.
func (s *Server) isr(p *storage.Partition) []int32 {
	if isr := s.leaders.isr(p); isr != nil {
		return isr
	}
	if s.peers != nil {
		if isr := s.peers.isrOf(p); isr != nil {
			return isr
		}
	}
	return s.replicasOf(p)
}

// ReplicaInfo is what a broker holds of one partition: its placement, the
// ISR as this broker knows it (see Metadata), and its own replica's
// offsets.
type ReplicaInfo struct {
	Leader        int32
	Replicas, ISR []int32
	LogStart      int64
	HighWatermark int64
	LogEnd        int64
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
	replicas := s.replicasOf(p)
	return ReplicaInfo{Leader: replicas[0], Replicas: replicas, ISR: s.isr(p),
		LogStart: o.LogStart, HighWatermark: o.HighWatermark, LogEnd: o.LogEnd}, nil
}
