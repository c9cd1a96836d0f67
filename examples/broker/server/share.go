package server

// Share groups (KIP-932): the broker's three parts of them, built here and
// used by the handlers 76_share_group_heartbeat.go to
// 79_share_acknowledge.go.
//
//   - Membership (package sharegroup) on the group's coordinator, routed by
//     the group's __consumer_offsets partition as a classic group is: a
//     share group's id shares the classic and consumer groups' keyspace.
//   - The share partitions (package share) on each partition's leader:
//     which records are in flight, with whom, under which acquisition lock.
//   - The share fetches that wait (share_fetch_wait.go), in the broker's
//     own "ShareFetch" purgatory, and the share sessions
//     (share_sessions.go).
//
// Acquisition locks and member sessions are tasks of one timing wheel of
// the library.
//
// Lock order: a waiting share fetch's operation lock (around TryComplete),
// then share.Manager's mu, then a share.Partition's mu (taken inside its
// methods), then the timer's own. shareSessions.mu and groupConfigs.mu are
// leaves: nothing else is taken with them held but the timer's.
// sharegroup.Coordinator's mu comes after the runtime's Topic.mu (a load
// of an offsets partition) and before what an append to
// __consumer_offsets takes (its store, the runtime's compaction lock and
// the storage partition's). The ShareFetch purgatory is only called with none
// of these held: a Partition wakes it after releasing its lock, the
// replica manager from Wake, the coordinator's Left after its own. The
// share partitions' windows are kept by the share coordinator
// (share_state.go): a broker that restarts goes on from them; the share
// groups' membership is kept in __consumer_offsets, beside the consumer
// groups', and loaded by the new leader of a group's partition (package
// sharegroup's doc).

import (
	"bytes"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/group/service"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/broker/sharegroup"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// shareBroker holds the broker's share-group state.
type shareBroker struct {
	s     *Server
	timer *timer.Timer // the acquisition locks and the members' sessions
	parts *share.Manager
	// persister keeps parts' state at the share coordinator
	// (share_state.go).
	persister *sharePersister
	groups    *sharegroup.Coordinator
	// fetches is the "ShareFetch" purgatory: share fetches waiting for
	// acquirable records, each watched under its share partitions' keys
	// and its partitions' keys (shareWaitKey).
	fetches  *purgatory.Purgatory[shareWaitKey]
	sessions shareSessions
	// waking is set once the partition wake hook is installed
	// (armWake): until a share fetch first waits, an append costs the
	// share purgatory nothing.
	waking atomic.Bool
	wakeMu sync.Mutex // guards the following; a leaf
	closed bool       // close ran: the hook is never installed again
}

func newShareBroker(s *Server) (_ *shareBroker, err error) {
	b := &shareBroker{s: s, sessions: newShareSessions()}
	if b.timer, err = timer.New(timer.WithLogger(s.log.Named("share"))); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	// Purge interval 0: a share fetch leaves both its keys' watch lists
	// as it completes (eager removal), so that a completed one, holding
	// its records, is never kept reachable by the key that did not
	// complete it: the memory leak of KAFKA-19389, where completed
	// DelayedShareFetches piled up under their second key until a purge.
	// Few fetches wait per key (one per member and partition), so the
	// compaction each completion costs is short.
	if b.fetches, err = purgatory.New[shareWaitKey]("ShareFetch", purgatory.WithLogger(s.log),
		purgatory.WithRegisterer(s.reg), purgatory.WithPurgeInterval(0)); err != nil {
		return nil, err
	}
	// The share partitions' state is read from and written to the share
	// coordinator (share_state.go).
	b.persister = &sharePersister{s: s, timer: b.timer}
	if b.parts, err = share.NewManager(share.Config{Timer: b.timer, Wake: b.wakeShare, Persister: b.persister,
		DeliveryLimit: s.cfg.GroupShareDeliveryCountLimit, MaxLocks: s.cfg.GroupSharePartitionMaxRecordLocks}); err != nil {
		return nil, err
	}
	// The groups' membership goes to their offsets partitions
	// (group/service's ShareStore), as the consumer groups' does, and
	// only groups of partitions loaded here are made (s.offsets is set
	// before this).
	if b.groups, err = sharegroup.New(sharegroup.Config{Timer: b.timer, Topic: b.topicInfo,
		Left: b.memberLeft, Store: service.ShareStore(func() *coordinator.Topic { return s.offsets }),
		Owns:           func(group string) bool { return s.offsets.Owns(group) },
		SessionTimeout: s.cfg.GroupShareSessionTimeout, HeartbeatInterval: s.cfg.GroupShareHeartbeatInterval,
		MaxSize:  s.cfg.GroupShareMaxSize,
		Timeouts: s.shareTimeouts}); err != nil { // share_configs.go
		return nil, err
	}
	// The partition wake hook is installed by the first share fetch that
	// waits (armWake), not here: a broker no share consumer reads from
	// pays no CheckAndComplete on every append.
	return b, nil
}

// armWake installs the partition wake hook, once, so that an append, a
// high watermark that moved or a leadership change wakes the share
// fetches waiting on the partition, as it wakes the fetches. A share
// fetch calls it before it is first tried and watched
// (TryCompleteElseWatch), which keeps the no-lost-wake-up promise: an
// append whose Wake found no hook happened before the hook was stored
// (replica.Manager.Wake loads it after the append), so before the
// fetch's first try, which sees its records. O(1): an atomic load once
// armed.
func (b *shareBroker) armWake() {
	if b.waking.Load() {
		return
	}
	b.wakeMu.Lock()
	defer b.wakeMu.Unlock()
	if b.closed || b.waking.Load() {
		return
	}
	b.s.replicas.OnWake(b.wakePartition)
	b.waking.Store(true)
}

// close answers the waiting share fetches and stops the timer: 1. the
// purgatory, whose fetches answer with what they can acquire (nothing,
// once the timer is closed: see share.Partition.Acquire); 2. the members'
// sessions; 3. the timer, dropping the locks still pending; 4. the
// share-state calls that waited on it to be tried again.
func (b *shareBroker) close() {
	b.wakeMu.Lock()
	b.closed = true
	b.s.replicas.OnWake(nil)
	b.wakeMu.Unlock()
	if b.fetches != nil {
		_ = b.fetches.Close()
	}
	if b.groups != nil {
		b.groups.Close()
	}
	b.timer.Close()
	if b.persister != nil {
		b.persister.close() // the share-state calls whose retries the timer dropped
	}
}

// memberLeft releases what a member that left its group (or whose session
// expired) holds on this broker, and drops its share session.
func (b *shareBroker) memberLeft(group, member string) {
	b.sessions.drop(group, member)
	b.parts.Release(group, member)
}

// topicInfo resolves a subscribed topic in the metadata image.
func (b *shareBroker) topicInfo(name string) (sharegroup.TopicInfo, bool) {
	t, err := b.s.image().Topic(name)
	if err != nil {
		return sharegroup.TopicInfo{}, false
	}
	return sharegroup.TopicInfo{ID: t.ID, Partitions: int32(len(t.Partitions))}, true
}

// shareWaitKey is a key of the ShareFetch purgatory: a share partition
// (Group set), or a partition (Group empty), as Kafka's DelayedShareFetch
// is watched under both.
type shareWaitKey struct {
	Group     string
	Topic     metadata.TopicID
	Partition int32
}

// wakeShare tries again the share fetches waiting on k's share partition,
// whose records became acquirable (a release, a lock that expired, the
// start that moved).
func (b *shareBroker) wakeShare(k share.Key) {
	b.fetches.CheckAndComplete(shareWaitKey{Group: k.Group, Topic: k.Topic, Partition: k.Partition})
}

// wakePartition tries again the share fetches waiting on p.
func (b *shareBroker) wakePartition(p *storage.Partition) {
	b.fetches.CheckAndComplete(shareWaitKey{Topic: metadata.TopicID(p.Topic().ID), Partition: p.Index()})
}

// groupExists reports whether id is a classic group's or a KIP-848
// consumer group's, which a share group cannot take.
func (s *Server) groupExists(id string) bool {
	if s.consumers.Has(id) {
		return true
	}
	d, found, _ := s.groups.DescribeGroup(id)
	return found && d.State != group.Dead
}

// sortedTopicIDs returns a's topic ids in increasing order, so that
// answers do not depend on map order.
func sortedTopicIDs(a sharegroup.Assignment) [][16]byte {
	ids := slices.Collect(maps.Keys(a))
	slices.SortFunc(ids, func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
	return ids
}

// deleteShareGroup deletes id if it is a share group (share is false
// otherwise): NON_EMPTY_GROUP while it has members; its share partitions'
// state goes with it.
func (s *Server) deleteShareGroup(id string) (share bool, err *kerr.Error) {
	found, deleted := s.share.groups.Delete(id)
	switch {
	case !found:
		return false, nil
	case !deleted:
		return true, kerr.NonEmptyGroup
	}
	for _, sp := range s.share.parts.Of(id) {
		s.share.parts.Delete(sp.Key())
		// Not waited for: a state left behind (the write failed, or a
		// partition led elsewhere) is read by the group's next share
		// partition leader, if the group comes back.
		s.share.persister.Delete(sp.Key(), func(error) {})
	}
	return true, nil
}

// emptyShareGroupCode is the group-level check of the share-group offset
// admin APIs: the group's coordinator (NOT_COORDINATOR elsewhere), op on
// the group (GROUP_AUTHORIZATION_FAILED), a share group
// (GROUP_ID_NOT_FOUND for a classic or consumer group's id, or, unless
// create, for an id of no group; with create it is made, empty, as
// AlterShareGroupOffsets makes it) with no member (NON_EMPTY_GROUP).
func (s *Server) emptyShareGroupCode(c access, id string, op kmsg.ACLOperation, create bool) int16 {
	defer s.groupTypes.lock(id)() // Ensure may create it (group_types.go)
	switch err := s.offsets.KeyError(id); {
	case err != nil:
		return err.Code
	case !c.Allows(op, groupResource, id):
		return kerr.GroupAuthorizationFailed.Code
	case s.groupExists(id), !create && !s.share.groups.Exists(id):
		return kerr.GroupIDNotFound.Code
	case !s.share.groups.Ensure(id):
		return kerr.NonEmptyGroup.Code
	}
	return 0
}
