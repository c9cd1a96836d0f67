package server

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/group/records"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// Where groups live: each group in the partition of the offsets topic that
// partitionFor names, coordinated by that partition's leader, as in Kafka.
// A broker coordinates the groups of the offsets partitions it leads once
// it has loaded them:
//
//   - on becoming leader of an offsets partition (a leader epoch of its
//     own in the image, this broker registered), it replays the partition
//     into the group coordinator: every group comes back with its
//     committed offsets and its last stored metadata, a group with members
//     Stable with them, its generation and assignments, each member's
//     session started afresh, so that members that keep heartbeating go
//     on without a rebalance, as at a Kafka coordinator that moved; those
//     that do not expire. Meanwhile the partition is loading: its
//     groups' requests are answered COORDINATOR_LOAD_IN_PROGRESS;
//   - on losing it (another leader, a new epoch, the topic deleted, this
//     broker fenced), it unloads its groups: the coordinator forgets them,
//     and every JoinGroup and SyncGroup waiting on them is answered
//     NOT_COORDINATOR at once, so that clients find the new coordinator.
//
// groupPartitions follows the image on the metadata log's apply goroutine
// (follow, from applied). The loaded partitions are published in an atomic
// snapshot, read without a lock by owns, which the coordinator calls under
// its own locks before it creates a group.
//
// Lock order: groupPartitions.mu, then a group's mutex, then the
// coordinator's map (Unload and Load take them under mu). Nothing under a
// group's mutex takes groupPartitions.mu.
type groupPartitions struct {
	s *Server // immutable

	owned atomic.Pointer[ownedPartitions] // the loaded partitions; never nil

	mu     sync.Mutex // guards the following; serializes loads and unloads
	topic  metadata.TopicID
	n      int                       // the topic's partitions
	states map[int32]*partitionState // the partitions this broker leads, by index
	wg     sync.WaitGroup            // the loads under way
}

// partitionState is one offsets partition this broker leads.
type partitionState struct {
	epoch  int32 // the leader epoch it was loaded at
	loaded bool
}

// ownedPartitions is a snapshot of the loaded offsets partitions.
type ownedPartitions struct {
	topic  metadata.TopicID
	n      int
	loaded map[int32]int32 // index → leader epoch
}

func newGroupPartitions(s *Server) *groupPartitions {
	gp := &groupPartitions{s: s, states: make(map[int32]*partitionState)}
	gp.owned.Store(&ownedPartitions{})
	return gp
}

// owns reports whether this broker coordinates group: it has loaded the
// group's offsets partition. Lock-free.
func (gp *groupPartitions) owns(group string) bool {
	o := gp.owned.Load()
	if o.n == 0 {
		return false
	}
	_, ok := o.loaded[partitionFor(group, o.n)]
	return ok
}

// loadedAt reports whether partition idx of the offsets topic id is
// loaded, at leader epoch epoch. Lock-free.
func (gp *groupPartitions) loadedAt(id metadata.TopicID, idx, epoch int32) bool {
	o := gp.owned.Load()
	e, ok := o.loaded[idx]
	return ok && o.topic == id && e == epoch
}

// publishLocked publishes the loaded partitions.
//
// REQUIRES: gp.mu held.
func (gp *groupPartitions) publishLocked() {
	o := &ownedPartitions{topic: gp.topic, n: gp.n, loaded: make(map[int32]int32, len(gp.states))}
	for idx, st := range gp.states {
		if st.loaded {
			o.loaded[idx] = st.epoch
		}
	}
	gp.owned.Store(o)
}

// follow makes the partitions loaded here those that im says this broker
// leads: it unloads those it no longer leads, and loads those it has come
// to lead. It runs on the metadata log's apply goroutine, for every record
// applied: O(offsets partitions).
func (gp *groupPartitions) follow(im *metadata.Image) {
	s := gp.s
	gp.mu.Lock()
	defer gp.mu.Unlock()
	t, err := im.Topic(offsetsTopic)
	if err != nil || t.ID != gp.topic {
		for idx := range gp.states {
			gp.unloadLocked(idx)
		}
		gp.topic, gp.n = metadata.TopicID{}, 0
	}
	if err != nil {
		gp.publishLocked()
		return
	}
	gp.topic, gp.n = t.ID, len(t.Partitions)
	registered := s.member.RegisteredIn(im)
	for i, p := range t.Partitions {
		idx := int32(i)
		leads := registered && p.Leader == s.brokers.Self()
		st := gp.states[idx]
		switch {
		case leads && st != nil && st.epoch == p.LeaderEpoch:
		case leads:
			if st != nil {
				gp.unloadLocked(idx)
			}
			gp.startLoadLocked(idx, p.LeaderEpoch)
		case st != nil:
			gp.unloadLocked(idx)
		}
	}
	gp.publishLocked()
}

// startLoadLocked begins loading partition idx, led here at epoch: at
// once if its log is empty, else on a goroutine of its own, which replays
// it (replayPartition) without a lock and loads the groups unless the
// partition was unloaded meanwhile. Until then the partition's groups are
// COORDINATOR_LOAD_IN_PROGRESS.
//
// REQUIRES: gp.mu held.
func (gp *groupPartitions) startLoadLocked(idx, epoch int32) {
	s := gp.s
	st := &partitionState{epoch: epoch}
	gp.states[idx] = st
	p, err := s.data.store.Partition(offsetsTopic, idx)
	if err != nil {
		s.log.Error("an offsets partition the image names is not here", zap.Int32("partition", idx), zap.Error(err))
		return
	}
	if o, err := p.Offsets(); err == nil && o.LogStart == o.LogEnd {
		gp.finishLoadLocked(idx, st, nil)
		return
	}
	s.log.Info("loading the groups of an offsets partition", zap.Int32("partition", idx), zap.Int32("leader_epoch", epoch))
	gp.wg.Add(1)
	go func() {
		defer gp.wg.Done()
		state, next, err := replayPartition(p)
		gp.mu.Lock()
		defer gp.mu.Unlock()
		switch {
		case gp.states[idx] != st:
			// Unloaded, or led again at another epoch, meanwhile.
		case err != nil:
			// Its groups stay COORDINATOR_LOAD_IN_PROGRESS rather than
			// forget offsets clients were told are committed.
			s.log.Error("cannot load an offsets partition", zap.Int32("partition", idx), zap.Error(err))
		default:
			// The compaction follows the log from what the load read.
			gp.s.compactor.loaded(p, epoch, state, next)
			gp.finishLoadLocked(idx, st, state.Groups())
			gp.publishLocked()
		}
	}()
}

// finishLoadLocked loads groups, replayed from partition idx, into the
// coordinator and marks the partition loaded (published by the caller).
//
// REQUIRES: gp.mu held.
func (gp *groupPartitions) finishLoadLocked(idx int32, st *partitionState, groups []group.StoredGroup) {
	n, err := gp.s.groups.Load(groups)
	if err != nil {
		return // closing
	}
	st.loaded = true
	gp.s.log.Debug("coordinating the groups of an offsets partition", zap.Int32("partition", idx),
		zap.Int32("leader_epoch", st.epoch), zap.Int("groups", n))
}

// replayPartition reads p from its log start to its log end, as its
// leader: a new leader's high watermark may not yet cover commits that
// the old leader acknowledged, all of which it holds (it was in their
// ISR), and as leader its log is never truncated. Kafka's coordinator
// loads to the log end too. It returns the replay and the offset after
// the last batch read.
func replayPartition(p *storage.Partition) (*records.Replay, int64, error) {
	o, err := p.Offsets()
	if err != nil {
		return nil, 0, err
	}
	var r records.Replay
	at := o.LogStart
	for at < o.LogEnd {
		res, err := p.Read(at, storage.ReadReplica, 1<<20, true)
		if err != nil {
			return nil, 0, err
		}
		if len(res.Records) == 0 {
			break
		}
		if at, err = r.Apply(res.Records); err != nil {
			return nil, 0, fmt.Errorf("%s-%d: %w", offsetsTopic, p.Index(), err)
		}
	}
	return &r, at, nil
}

// unloadLocked forgets partition idx and unloads its groups: the
// coordinator answers what waits on them NOT_COORDINATOR. The snapshot is
// published first, so that no group of it is created meanwhile.
//
// REQUIRES: gp.mu held.
func (gp *groupPartitions) unloadLocked(idx int32) {
	delete(gp.states, idx)
	gp.publishLocked()
	gp.s.compactor.forget(idx)
	n := gp.n
	gone := gp.s.groups.Unload(func(group string) bool { return partitionFor(group, n) == idx })
	gp.s.log.Debug("unloaded the groups of an offsets partition", zap.Int32("partition", idx), zap.Int("groups", gone))
}

// wait waits for the loads under way; the metadata log is closed, so no
// new one starts.
func (gp *groupPartitions) wait() { gp.wg.Wait() }

// groupError returns nil if this broker coordinates group now, else the
// error its requests get: COORDINATOR_NOT_AVAILABLE while the offsets
// topic cannot be created (it is created here if missing, as
// FindCoordinator creates it) or the group's partition has no leader,
// NOT_COORDINATOR when another broker leads it,
// COORDINATOR_LOAD_IN_PROGRESS while this broker loads it.
func (s *Server) groupError(r *kafkanet.Request, group string) *kerr.Error {
	t, err := s.image().Topic(offsetsTopic)
	if err != nil {
		if err := s.ensureOffsetsTopic(r); err != nil {
			return kerr.CoordinatorNotAvailable
		}
		if t, err = s.image().Topic(offsetsTopic); err != nil {
			return kerr.CoordinatorNotAvailable
		}
	}
	idx := partitionFor(group, len(t.Partitions))
	p := t.Partitions[idx]
	switch {
	case p.Offline():
		return kerr.CoordinatorNotAvailable
	case p.Leader != s.brokers.Self() || !s.registered():
		return kerr.NotCoordinator
	case !s.gparts.loadedAt(t.ID, idx, p.LeaderEpoch):
		return kerr.CoordinatorLoadInProgress
	}
	return nil
}
