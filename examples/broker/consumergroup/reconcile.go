package consumergroup

// A member moves towards its target assignment one step a heartbeat
// (Kafka's CurrentAssignmentBuilder), never holding a partition another
// member still holds:
//
//   - Stable: it has its target, at the target's epoch. A new target
//     (the group's assignment epoch moved) starts the next step.
//   - UnrevokedPartitions: it holds partitions its target no longer
//     has. It keeps its epoch, is told to revoke them, and stays until a
//     heartbeat's owned partitions show none of them (or its rebalance
//     timeout fences it); then it takes the next epoch.
//   - UnreleasedPartitions: it has the target's epoch, and every
//     partition of its target but those another member has not yet
//     released; it takes each once free.
//
// The member epoch only moves to the target epoch once the member holds
// nothing it must give up: a partition is never owned by two members at
// one epoch.

// memberState is where a member is in its reconciliation.
type memberState uint8

const (
	stable memberState = iota
	unrevokedPartitions
	unreleasedPartitions
)

func (s memberState) String() string {
	switch s {
	case unrevokedPartitions:
		return "unrevoked_partitions"
	case unreleasedPartitions:
		return "unreleased_partitions"
	}
	return "stable"
}

// current is a member's reconciliation: its state, its epoch, the
// partitions it is assigned and those it must revoke.
type current struct {
	state    memberState
	epoch    int32
	assigned Assignment
	revoking Assignment
}

// reconcile returns c's next step towards target at targetEpoch (Kafka's
// CurrentAssignmentBuilder.build). owned are the partitions the member
// says it holds (nil: it did not say, and is taken to hold everything it
// was assigned); free reports whether no other member holds a partition.
func reconcile(c current, targetEpoch int32, target, owned Assignment, free func(TopicID, int32) bool) current {
	switch c.state {
	case unrevokedPartitions:
		if holdsAny(owned, c.revoking) {
			return c // still revoking
		}
		return nextStep(min(c.epoch+1, targetEpoch), c.assigned, targetEpoch, target, owned, free)
	case unreleasedPartitions:
		return nextStep(c.epoch, c.assigned, targetEpoch, target, owned, free)
	default:
		if c.epoch != targetEpoch {
			return nextStep(c.epoch, c.assigned, targetEpoch, target, owned, free)
		}
		return c
	}
}

// nextStep computes a member's next step from the partitions it is
// assigned at epoch (Kafka's computeNextAssignment): what it must revoke
// first, at the same epoch; else the target's epoch, with every target
// partition that is free.
func nextStep(epoch int32, assigned Assignment, targetEpoch int32, target, owned Assignment, free func(TopicID, int32) bool) current {
	keep, revoke, gain := Assignment{}, Assignment{}, Assignment{}
	unreleased := false
	for _, id := range topicIDs(target, assigned) {
		for _, p := range assigned[id] {
			if target.has(id, p) {
				keep.add(id, p)
			} else {
				revoke.add(id, p)
			}
		}
		for _, p := range target[id] {
			switch {
			case assigned.has(id, p):
			case free(id, p):
				gain.add(id, p)
			default:
				unreleased = true
			}
		}
	}
	if len(revoke) > 0 && holdsAny(owned, revoke) {
		return current{state: unrevokedPartitions, epoch: epoch, assigned: keep, revoking: revoke}
	}
	for id, ps := range gain {
		for _, p := range ps {
			keep.add(id, p)
		}
	}
	st := stable
	if unreleased {
		st = unreleasedPartitions
	}
	return current{state: st, epoch: targetEpoch, assigned: keep}
}

// holdsAny reports whether a member that says it owns owned may still
// hold a partition of revoke: nil owned says nothing, so it may.
func holdsAny(owned, revoke Assignment) bool {
	if owned == nil {
		return true
	}
	return owned.overlaps(revoke)
}
