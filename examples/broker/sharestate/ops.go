package sharestate

// The share-state RPCs (KIP-932), as Kafka's ShareCoordinatorShard
// serves them, one share partition at a time:
//
//   - Initialize (InitializeShareGroupState) sets a share partition's
//     start offset at a state epoch, emptying its window: a state epoch
//     below the stored one is FENCED_STATE_EPOCH;
//   - Read (ReadShareGroupState) returns the state to the share partition's
//     leader, which names its leader epoch: one below the stored one is
//     FENCED_LEADER_EPOCH; one above it is stored (a record written and
//     replicated before the answer), so that the previous leader's writes
//     are fenced from then on. A key never initialized reads as start
//     offset -1;
//   - Write (WriteShareGroupState) replaces the state: FENCED_LEADER_EPOCH
//     or FENCED_STATE_EPOCH for epochs below the stored ones (a leader
//     epoch of -1 keeps the stored one);
//   - Delete (DeleteShareGroupState) writes the key's tombstone;
//   - Summary (ReadShareGroupStateSummary) returns the state without its
//     batches, and writes nothing.
//
// Every change is appended to the key's partition and answered once
// replicated (min.insync.replicas enforced), as Kafka's coordinator
// appends with acks=-1. The state is the coordinator's from the append on:
// a Read meanwhile sees it before it is durable. Kafka's runtime reads
// at the last committed offset; here the leader of a share partition is
// the only writer of its key and waits for each write before the next
// (package share), so only it could see the difference.
//
// Unlike Kafka, a key's topic and partition are not checked against the
// metadata image (UNKNOWN_TOPIC_OR_PARTITION): the share partition's
// leader named them, and a deleted topic's states are deleted with the
// group.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Initialize sets k's start offset to start at state epoch stateEpoch,
// with no record in flight, and calls done once it is durable (nil), or
// with why not. The stored leader epoch is kept.
func (c *Coordinator) Initialize(k Key, stateEpoch int32, start int64, done func(error)) {
	c.mu.Lock()
	states, err := c.statesLocked(k)
	if err != nil {
		c.mu.Unlock()
		done(err)
		return
	}
	st := &State{StateEpoch: stateEpoch, LeaderEpoch: -1, StartOffset: start}
	if old := states[k]; old != nil {
		if old.StateEpoch > stateEpoch {
			c.mu.Unlock()
			done(fmt.Errorf("%w: %s's state epoch is %d, not %d", kerr.FencedStateEpoch, k, old.StateEpoch, stateEpoch))
			return
		}
		st.LeaderEpoch = old.LeaderEpoch
	}
	wait, err := c.putLocked(states, k, st)
	c.mu.Unlock()
	if err != nil {
		done(err)
		return
	}
	wait(done)
}

// Read returns k's state to the leader of its partition at leaderEpoch
// (-1: none checked), through done: StartOffset -1 when it was never
// initialized. A leader epoch above the stored one is stored first, and
// done called once that is durable.
func (c *Coordinator) Read(k Key, leaderEpoch int32, done func(State, error)) {
	c.mu.Lock()
	states, err := c.statesLocked(k)
	if err != nil {
		c.mu.Unlock()
		done(State{}, err)
		return
	}
	old := states[k]
	switch {
	case old == nil:
		c.mu.Unlock()
		done(State{LeaderEpoch: -1, StartOffset: -1}, nil)
		return
	case old.LeaderEpoch > leaderEpoch && leaderEpoch >= 0:
		c.mu.Unlock()
		done(State{}, fmt.Errorf("%w: %s's leader epoch is %d, not %d", kerr.FencedLeaderEpoch, k, old.LeaderEpoch, leaderEpoch))
		return
	case old.LeaderEpoch >= leaderEpoch:
		st := old.clone()
		c.mu.Unlock()
		done(st, nil)
		return
	}
	st := old.clone()
	st.LeaderEpoch = leaderEpoch
	wait, err := c.putLocked(states, k, &st)
	c.mu.Unlock()
	if err != nil {
		done(State{}, err)
		return
	}
	wait(func(err error) { done(st.clone(), err) })
}

// Write replaces k's state with st and calls done once it is durable
// (nil), or with why not. A leader epoch of -1 keeps the stored one.
func (c *Coordinator) Write(k Key, st State, done func(error)) {
	c.mu.Lock()
	states, err := c.statesLocked(k)
	if err != nil {
		c.mu.Unlock()
		done(err)
		return
	}
	if old := states[k]; old != nil {
		switch {
		case old.LeaderEpoch > st.LeaderEpoch && st.LeaderEpoch >= 0:
			c.mu.Unlock()
			done(fmt.Errorf("%w: %s's leader epoch is %d, not %d", kerr.FencedLeaderEpoch, k, old.LeaderEpoch, st.LeaderEpoch))
			return
		case old.StateEpoch > st.StateEpoch:
			c.mu.Unlock()
			done(fmt.Errorf("%w: %s's state epoch is %d, not %d", kerr.FencedStateEpoch, k, old.StateEpoch, st.StateEpoch))
			return
		case st.LeaderEpoch < 0:
			st.LeaderEpoch = old.LeaderEpoch
		}
	}
	st = st.clone()
	wait, err := c.putLocked(states, k, &st)
	c.mu.Unlock()
	if err != nil {
		done(err)
		return
	}
	wait(done)
}

// Delete deletes k's state, and calls done once the tombstone is durable;
// a key with no state is deleted at once.
func (c *Coordinator) Delete(k Key, done func(error)) {
	c.mu.Lock()
	states, err := c.statesLocked(k)
	if err != nil {
		c.mu.Unlock()
		done(err)
		return
	}
	if states[k] == nil {
		c.mu.Unlock()
		done(nil)
		return
	}
	wait, err := c.putLocked(states, k, nil)
	c.mu.Unlock()
	if err != nil {
		done(err)
		return
	}
	wait(done)
}

// Summary returns k's state without its batches: StartOffset -1 when it
// was never initialized. O(1).
func (c *Coordinator) Summary(k Key) (State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	states, err := c.statesLocked(k)
	if err != nil {
		return State{}, err
	}
	old := states[k]
	if old == nil {
		return State{LeaderEpoch: -1, StartOffset: -1}, nil
	}
	return State{StateEpoch: old.StateEpoch, LeaderEpoch: old.LeaderEpoch, StartOffset: old.StartOffset}, nil
}

// clone returns a copy of st that shares nothing with it.
func (st *State) clone() State {
	out := *st
	out.Batches = append([]Batch(nil), st.Batches...)
	return out
}
