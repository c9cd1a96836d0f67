package metadata

import (
	"errors"
	"fmt"
	"slices"
)

// A reassignment (KIP-455, Kafka's AlterPartitionReassignments) moves a
// partition from its replicas to a target set in three steps, each a
// record:
//
//  1. Start: the replica set becomes the target followed by the current
//     replicas the target lacks (AddingReplicas are the target's new
//     brokers, RemovingReplicas the ones it drops, both ascending as
//     Kafka keeps them); the ISR and the leader stay. The adding brokers
//     are followers from then on and catch up by the ordinary follower
//     fetch.
//  2. Catch-up: the leader adds each adding replica to the ISR, as any
//     follower's, through AlterISR.
//  3. Completion: once every target replica is in the ISR (at the start
//     already, or in the AlterISR that adds the last), the same record
//     makes the target the replicas, drops the removing ones from the
//     ISR and, if the leader is one of them, gives the leadership to the
//     first target replica in the ISR and not fenced. The removed
//     brokers stop following and drop their copy.
//
// The leader epoch moves when the leader does, and whenever replicas are
// removed (at completion or cancellation), as Kafka's PartitionChangeBuilder
// bumps it, so that a removed follower's fetches are refused at once; the
// partition epoch moves at every step. A cancel (null replicas) reverts
// to the original replicas (Replicas less AddingReplicas), with the
// adding ones out of the ISR; if that would leave the ISR empty, the
// first original replica is put in it, which is an unclean election and
// is refused unless the topic allows those.
//
//	replicas [1], ISR [1], leader 1; reassign to [2]:
//	  start:    replicas [2 1] adding [2] removing [1], ISR [1], leader 1
//	  catch-up: the leader asks ISR [2 1]; the same record completes:
//	            replicas [2], ISR [2], leader 2, leader epoch + 1

// ErrNoReassignmentInProgress is returned for a cancel of a partition
// that is not being reassigned (Kafka's NO_REASSIGNMENT_IN_PROGRESS).
var ErrNoReassignmentInProgress = errors.New("metadata: no reassignment in progress")

// ErrInvalidReplicationFactor is returned for a reassignment that would
// change the replication factor when the request forbids it (KIP-860's
// allow_replication_factor_change false; INVALID_REPLICATION_FACTOR).
var ErrInvalidReplicationFactor = errors.New("metadata: invalid replication factor")

// Reassigning reports whether a reassignment of p is in flight.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// OriginalReplicas returns p's replicas before the reassignment in flight
// (all of them when none is): the ones it is not adding.
func (p Partition) OriginalReplicas() []int32 {
	return without(p.Replicas, p.AddingReplicas)
}

// Reassignment is one partition of an AlterPartitionReassignments
// request: Target its new replicas, in preference order, or nil to cancel
// the reassignment in flight.
type Reassignment struct {
	Partition PartitionRef
	Target    []int32
}

// Reassign returns the record that starts, changes, completes at once or
// cancels the reassignments of reqs (see the comment above), and each
// one's result: nil for one the record makes, else ErrUnknownTopic,
// ErrUnknownPartition, ErrNoReassignmentInProgress,
// ErrInvalidReplicaAssignment (an empty target, a broker twice, one not of
// the cluster's brokers, a cancel that needs an unclean election the
// topic does not allow) or ErrInvalidReplicationFactor (with allowRF
// false, a target whose size is not the original replicas'). A new
// target for a partition being reassigned is decided from its current
// replicas, as Kafka decides it: a broker being added that the new target
// lacks is removed in turn. A target that is the replicas already, with
// none in flight, succeeds and changes nothing. A partition listed twice is decided the
// second time from what the first left. uncleanDefault is the cluster's
// unclean.leader.election.enable. O(len(reqs) × replicas).
func Reassign(im *Image, brokers []int32, reqs []Reassignment, allowRF, uncleanDefault bool) (Record, []error) {
	var rec Record
	results := make([]error, len(reqs))
	decided := make(map[PartitionRef]int) // index in rec.Partitions
	for i, req := range reqs {
		ref := req.Partition
		t, err := im.TopicByID(ref.Topic)
		if err != nil {
			results[i] = err
			continue
		}
		p, err := im.Partition(ref.Topic, ref.Index)
		if err != nil {
			results[i] = err
			continue
		}
		j, again := decided[ref]
		if again {
			p = rec.Partitions[j].Partition
		}
		var next Partition
		if req.Target == nil {
			next, err = cancelReassignment(im, p, UncleanElection(t, uncleanDefault))
		} else {
			next, err = startReassignment(im, brokers, p, req.Target, allowRF)
		}
		if results[i] = err; err != nil || next.PartitionEpoch == p.PartitionEpoch {
			continue // refused, or nothing to change
		}
		if again {
			rec.Partitions[j].Partition = next
			continue
		}
		decided[ref] = len(rec.Partitions)
		rec.Partitions = append(rec.Partitions, PartitionChange{Topic: ref.Topic, Index: ref.Index, Partition: next})
	}
	return rec, results
}

// startReassignment returns p reassigned to target, completed at once if
// every target replica is in the ISR already (a reassignment that only
// removes replicas, or reorders them).
func startReassignment(im *Image, brokers []int32, p Partition, target []int32, allowRF bool) (Partition, error) {
	if err := validTarget(brokers, target); err != nil {
		return p, err
	}
	if orig := p.OriginalReplicas(); !allowRF && len(target) != len(orig) {
		return p, kafkaErrorf(ErrInvalidReplicationFactor, "The replication factor is changed from %d to %d "+
			"but allowReplicationFactorChange is false", len(orig), len(target))
	}
	if !p.Reassigning() && slices.Equal(target, p.Replicas) {
		return p, nil // already there: no record, as Kafka writes none
	}
	next := p.clone()
	next.RemovingReplicas = slices.Sorted(slices.Values(without(p.Replicas, target)))
	next.AddingReplicas = slices.Sorted(slices.Values(without(target, p.Replicas)))
	next.Replicas = append(slices.Clone(target), next.RemovingReplicas...)
	next.ISR = inOrder(next.Replicas, p.ISR)
	next = completeReassignment(im, p, next)
	next.PartitionEpoch = p.PartitionEpoch + 1
	return next, nil
}

// validTarget checks a reassignment's target as Kafka checks a manual
// assignment: not empty, each broker once and of the cluster.
func validTarget(brokers, target []int32) error {
	if len(target) == 0 {
		return kafkaErrorf(ErrInvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Sorted(slices.Values(target))
	for i, b := range sorted {
		if !slices.Contains(brokers, b) {
			return kafkaErrorf(ErrInvalidReplicaAssignment, "The manual partition assignment includes broker %d, "+
				"but no such broker is registered.", b)
		}
		if i > 0 && sorted[i-1] == b {
			return kafkaErrorf(ErrInvalidReplicaAssignment, "The manual partition assignment includes the broker %d "+
				"more than once.", b)
		}
	}
	return nil
}

// cancelReassignment returns p reverted to its original replicas, the
// adding ones out of its ISR; an ISR left empty takes the first original
// replica, uncleanly, which only unclean allows.
func cancelReassignment(im *Image, p Partition, unclean bool) (Partition, error) {
	if !p.Reassigning() {
		return p, fmt.Errorf("%w: replicas %v", ErrNoReassignmentInProgress, p.Replicas)
	}
	next := p.clone()
	next.Replicas = p.OriginalReplicas()
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	next.ISR = inOrder(next.Replicas, p.ISR)
	if len(next.ISR) == 0 {
		if !unclean {
			return p, fmt.Errorf("%w: reverting replicas %v to %v would need an unclean leader election",
				ErrInvalidReplicaAssignment, p.Replicas, next.Replicas)
		}
		next.ISR = next.Replicas[:1]
	}
	next.Leader = leaderAfter(im, p.Leader, next.ISR)
	next.LeaderEpoch = p.LeaderEpoch + epochStep(p, next)
	next.PartitionEpoch = p.PartitionEpoch + 1
	return next, nil
}

// completeReassignment completes next, a reassignment of was, if every
// replica of its target is in its ISR: the target becomes the replicas,
// the ISR keeps only its members, and the leadership moves to the first
// of them that is not fenced if the leader is not one. It returns next
// unchanged otherwise. The leader epoch is set from was's; the partition
// epoch is the caller's.
func completeReassignment(im *Image, was, next Partition) Partition {
	if !next.Reassigning() {
		return next
	}
	target := without(next.Replicas, next.RemovingReplicas)
	isr := inOrder(target, next.ISR)
	if len(isr) != len(target) {
		return next
	}
	next.Replicas, next.ISR = target, isr
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	next.Leader = leaderAfter(im, was.Leader, isr)
	next.LeaderEpoch = was.LeaderEpoch + epochStep(was, next)
	return next
}

// leaderAfter returns the leader of a partition whose ISR becomes isr:
// leader if it is in it, else the first member not fenced, else
// NoLeader.
func leaderAfter(im *Image, leader int32, isr []int32) int32 {
	if slices.Contains(isr, leader) {
		return leader
	}
	for _, r := range isr {
		if !im.Fenced(r) {
			return r
		}
	}
	return NoLeader
}

// epochStep is how far the leader epoch moves from was to next: one if
// the leader changed or a replica was removed, as Kafka bumps it, so
// that a removed replica's fetches at the old epoch are refused.
func epochStep(was, next Partition) int32 {
	if was.Leader != next.Leader || len(without(was.Replicas, next.Replicas)) > 0 {
		return 1
	}
	return 0
}

// without returns the members of a not in b, in a's order.
func without(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// inOrder returns the members of set that are in order, in order's order:
// an ISR kept in replica order.
func inOrder(order, set []int32) []int32 {
	out := make([]int32, 0, len(set))
	for _, x := range order {
		if slices.Contains(set, x) {
			out = append(out, x)
		}
	}
	return out
}
