package coordinator

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Where keys live: each key (a group) in the partition of its state topic
// that PartitionFor names, coordinated by that partition's leader, as in
// Kafka. A broker coordinates the keys of the partitions it leads once it
// has loaded them:
//
//   - on becoming leader of a partition (a leader epoch of its own in the
//     image, this broker registered), it replays the partition into a
//     state (Shard.NewState) and hands it to the shard (Shard.Load): for
//     groups, every group comes back with its committed offsets and its
//     last stored metadata, a group with members Stable with them, its
//     generation and assignments, each member's session started afresh,
//     so that members that keep heartbeating go on without a rebalance, as
//     at a Kafka coordinator that moved; those that do not expire.
//     Meanwhile the partition is loading: its keys' requests are answered
//     COORDINATOR_LOAD_IN_PROGRESS (KeyError);
//   - on losing it (another leader, a new epoch, the topic deleted, this
//     broker fenced), it unloads its keys (Shard.Unload): the shard forgets
//     them, and answers what waits on them (a JoinGroup, a SyncGroup)
//     NOT_COORDINATOR at once, so that clients find the new coordinator.
//
// A Topic follows the image on the metadata log's apply goroutine
// (Runtime.Follow). The loaded partitions are published in an atomic
// snapshot, read without a lock by Owns, which the shard calls under its
// own locks before it creates a key's state.

// partitionState is one partition this broker leads.
type partitionState struct {
	epoch  int32 // the leader epoch it was loaded at
	loaded bool
}

// ownedPartitions is a snapshot of the loaded partitions.
type ownedPartitions struct {
	topic  metadata.TopicID
	n      int
	loaded map[int32]int32 // index → leader epoch
}

// Owns reports whether this broker coordinates key: it has loaded key's
// partition. Lock-free: the shard calls it under its own locks before it
// creates a key's state.
func (t *Topic) Owns(key string) bool {
	o := t.owned.Load()
	if o.n == 0 {
		return false
	}
	_, ok := o.loaded[PartitionFor(key, o.n)]
	return ok
}

// PartitionOf returns the partition of key and whether this broker has
// loaded it (Owns). Lock-free, as Owns: a shard that keeps its keys by
// partition calls it under its own locks before it creates a key's state.
func (t *Topic) PartitionOf(key string) (idx int32, loaded bool) {
	o := t.owned.Load()
	if o.n == 0 {
		return 0, false
	}
	idx = PartitionFor(key, o.n)
	_, loaded = o.loaded[idx]
	return idx, loaded
}

// Loaded reports whether this broker has loaded partition idx: its
// shard holds the partition's keys. Lock-free. A record appended to a
// partition led here but not loaded may be missed by the load under way
// (its replay read the log to an end before it), so what the shard must
// see (a transaction marker on an offsets partition) waits until it is.
func (t *Topic) Loaded(idx int32) bool {
	_, ok := t.owned.Load().loaded[idx]
	return ok
}

// loadedAt reports whether partition idx of the topic id is loaded, at
// leader epoch epoch. Lock-free.
func (t *Topic) loadedAt(id metadata.TopicID, idx, epoch int32) bool {
	o := t.owned.Load()
	e, ok := o.loaded[idx]
	return ok && o.topic == id && e == epoch
}

// publishLocked publishes the loaded partitions.
//
// REQUIRES: t.mu held.
func (t *Topic) publishLocked() {
	o := &ownedPartitions{topic: t.topic, n: t.n, loaded: make(map[int32]int32, len(t.states))}
	for idx, st := range t.states {
		if st.loaded {
			o.loaded[idx] = st.epoch
		}
	}
	t.owned.Store(o)
}

// follow makes the partitions loaded here those that im says this broker
// leads: it unloads those it no longer leads, and loads those it has come
// to lead. It runs on the metadata log's apply goroutine, for every record
// applied: O(partitions).
func (t *Topic) follow(im *metadata.Image) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mt, err := im.Topic(t.spec.Name)
	if err != nil || mt.ID != t.topic {
		for idx := range t.states {
			t.unloadLocked(idx)
		}
		t.topic, t.n = metadata.TopicID{}, 0
	}
	if err != nil {
		t.publishLocked()
		return
	}
	t.topic, t.n = mt.ID, len(mt.Partitions)
	registered := t.rt.member.RegisteredIn(im)
	self := t.rt.member.Self()
	for i, p := range mt.Partitions {
		idx := int32(i)
		leads := registered && p.Leader == self
		st := t.states[idx]
		switch {
		case leads && st != nil && st.epoch == p.LeaderEpoch:
		case leads:
			if st != nil {
				t.unloadLocked(idx)
			}
			t.startLoadLocked(idx, p.LeaderEpoch)
		case st != nil:
			t.unloadLocked(idx)
		}
	}
	t.publishLocked()
}

// startLoadLocked begins loading partition idx, led here at epoch: at
// once if its log is empty, else on a goroutine of its own, which replays
// it (replay) without a lock and hands the state to the shard unless the
// partition was unloaded meanwhile. Until then the partition's keys are
// COORDINATOR_LOAD_IN_PROGRESS.
//
// REQUIRES: t.mu held.
func (t *Topic) startLoadLocked(idx, epoch int32) {
	log := t.rt.log
	st := &partitionState{epoch: epoch}
	t.states[idx] = st
	p, err := t.rt.rm.Store().Partition(t.spec.Name, idx)
	if err != nil {
		log.Error("a state partition the image names is not here", zap.String("topic", t.spec.Name),
			zap.Int32("partition", idx), zap.Error(err))
		return
	}
	if o, err := p.Offsets(); err == nil && o.LogStart == o.LogEnd {
		t.finishLoadLocked(idx, st, t.shard.NewState())
		return
	}
	log.Info("loading a state partition", zap.String("topic", t.spec.Name), zap.Int32("partition", idx),
		zap.Int32("leader_epoch", epoch))
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		state, next, err := t.replay(p)
		t.mu.Lock()
		defer t.mu.Unlock()
		switch {
		case t.states[idx] != st:
			// Unloaded, or led again at another epoch, meanwhile.
		case err != nil:
			// Its keys stay COORDINATOR_LOAD_IN_PROGRESS rather than
			// forget what clients were told is committed.
			log.Error("cannot load a state partition", zap.String("topic", t.spec.Name), zap.Int32("partition", idx),
				zap.Error(err))
		default:
			// The compaction follows the log from what the load read.
			t.compactor.loaded(p, epoch, state, next)
			t.finishLoadLocked(idx, st, state)
			t.publishLocked()
		}
	}()
}

// finishLoadLocked hands state, replayed from partition idx, to the shard
// and marks the partition loaded (published by the caller).
//
// REQUIRES: t.mu held.
func (t *Topic) finishLoadLocked(idx int32, st *partitionState, state State) {
	n, err := t.shard.Load(idx, st.epoch, state)
	if err != nil {
		return // closing
	}
	st.loaded = true
	t.rt.log.Debug("coordinating the keys of a state partition", zap.String("topic", t.spec.Name), zap.Int32("partition", idx),
		zap.Int32("leader_epoch", st.epoch), zap.Int("keys", n))
}

// replay reads p from its log start to its log end into a new state, as
// its leader: a new leader's high watermark may not yet cover appends
// that the old leader acknowledged, all of which it holds (it was in their
// ISR), and as leader its log is never truncated. Kafka's coordinator
// loads to the log end too. It returns the state and the offset after the
// last batch read.
func (t *Topic) replay(p *storage.Partition) (State, int64, error) {
	o, err := p.Offsets()
	if err != nil {
		return nil, 0, err
	}
	r := t.shard.NewState()
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
			return nil, 0, fmt.Errorf("%s-%d: %w", t.spec.Name, p.Index(), err)
		}
	}
	return r, at, nil
}

// unloadLocked forgets partition idx and unloads its keys: the shard
// answers what waits on them NOT_COORDINATOR. The snapshot is published
// first, so that no key of it is created meanwhile.
//
// REQUIRES: t.mu held.
func (t *Topic) unloadLocked(idx int32) {
	delete(t.states, idx)
	t.publishLocked()
	t.compactor.forget(idx)
	n := t.n
	gone := t.shard.Unload(idx, func(key string) bool { return PartitionFor(key, n) == idx })
	t.rt.log.Debug("unloaded a state partition", zap.String("topic", t.spec.Name), zap.Int32("partition", idx),
		zap.Int("keys", gone))
}

// Reload unloads partition idx and loads it again at the same leader
// epoch, as a new leader loads it, calling between (if not nil) while it
// is unloaded, and waits for the load: for tests of what a move to
// another coordinator keeps. A partition not led here is left alone.
func (t *Topic) Reload(idx int32, between func()) {
	t.mu.Lock()
	st := t.states[idx]
	if st == nil {
		t.mu.Unlock()
		return
	}
	t.unloadLocked(idx)
	t.publishLocked()
	t.mu.Unlock()
	if between != nil {
		between()
	}
	t.mu.Lock()
	t.startLoadLocked(idx, st.epoch)
	t.publishLocked()
	t.mu.Unlock()
	t.wg.Wait()
}

// KeyError returns nil if this broker coordinates key now, else the error
// its requests get: COORDINATOR_NOT_AVAILABLE while the topic cannot be
// created (it is created here if missing, as FindCoordinator creates it)
// or the key's partition has no leader, NOT_COORDINATOR when another
// broker leads it, COORDINATOR_LOAD_IN_PROGRESS while this broker loads it.
func (t *Topic) KeyError(key string) *kerr.Error {
	member := t.rt.member
	mt, err := member.Image().Topic(t.spec.Name)
	if err != nil {
		if err := t.Ensure(); err != nil {
			return kerr.CoordinatorNotAvailable
		}
		if mt, err = member.Image().Topic(t.spec.Name); err != nil {
			return kerr.CoordinatorNotAvailable
		}
	}
	idx := PartitionFor(key, len(mt.Partitions))
	p := mt.Partitions[idx]
	switch {
	case p.Offline():
		return kerr.CoordinatorNotAvailable
	case p.Leader != member.Self() || !member.MayLead():
		return kerr.NotCoordinator
	case !t.loadedAt(mt.ID, idx, p.LeaderEpoch):
		return kerr.CoordinatorLoadInProgress
	}
	return nil
}
