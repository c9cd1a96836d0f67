package group

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"
)

// An OffsetStore keeps what the coordinator must find again when it
// moves or restarts: each group's committed offsets, and its metadata
// (Kafka's GroupMetadataValue): its protocol type, which decides how its
// offsets expire (KIP-211), and, once a rebalance completes, its
// generation, protocol, leader and members with their assignments, so
// that members that keep heartbeating go on at the coordinator that takes
// the group over without a rebalance. WithOffsetStore sets one; the
// broker's appends to the group's partition of __consumer_offsets.
//
// The coordinator calls it with the group's mutex held, in the order the
// changes happen, so each call must be quick and must not call back into
// the coordinator: it appends the change (to the leader's log) and
// returns. A commit is not durable yet when Commit returns: it is pending
// until its record is replicated, which the coordinator waits for with no
// lock held (Pending), and only then is the offset visible to
// FetchOffsets and the client told it is committed (Kafka's pending
// offset commits, acks=-1). Deletions and expiries are tombstones appended
// without a wait, as Kafka appends them. A transaction's offsets
// (TxnCommit) are appended as its producer's and wait alike; the
// transaction's marker, written to the partition by the transaction
// coordinator's WriteTxnMarkers, ends them (CompleteTxn). Different
// groups' changes come concurrently: a store guards itself.
type OffsetStore interface {
	// Commit appends offsets committed to group, and returns
	// the wait for them to be durable. An error means nothing was
	// appended (this broker no longer leads the group's partition, say);
	// the client is answered the *kerr.Error it wraps (such as
	// COORDINATOR_NOT_AVAILABLE), or NOT_COORDINATOR. protocolType is
	// the group's protocol type while no metadata of the group is stored
	// (Group) since it was created or loaded, for the store to keep with
	// the offsets; "" otherwise, or for a group that never had members:
	// the metadata stored stays as it is.
	Commit(group, protocolType string, offsets []StoredOffset) (Pending, error)
	// Group appends g's metadata (g.Offsets is empty: the offsets are
	// Commit's), which replaces the group's metadata stored before, and
	// returns the wait for it to be durable, as Commit does. The
	// coordinator stores it when a rebalance completes (the leader's
	// SyncGroup answered once it is durable, as Kafka's doSyncGroup does)
	// and when the group becomes Empty (nobody waits).
	Group(g StoredGroup) (Pending, error)
	// Delete appends that group's offsets of partitions are gone,
	// deleted (OffsetDelete) or expired.
	Delete(group string, partitions []TopicPartition) error
	// DeleteGroup appends that group is gone with its offsets of
	// partitions.
	DeleteGroup(group string, partitions []TopicPartition) error
	// TxnCommit appends offsets committed to group in producerID's open
	// transaction, as that producer's at producerEpoch (a transactional
	// batch), and returns the wait for them to be durable, as Commit
	// does. They are pending until the transaction's marker follows them
	// in the partition: a commit marker makes them the group's offsets
	// where their record is newer, an abort marker drops them, and a
	// tombstone of a partition (Delete, DeleteGroup) drops its pending
	// ones; a load finds those still pending in StoredGroup.TxnOffsets.
	// No metadata of the group is appended with them: a transaction may
	// be aborted.
	TxnCommit(group string, producerID int64, producerEpoch int16, offsets []StoredOffset) (Pending, error)
}

// Pending is a commit appended but not yet durable. The coordinator calls
// it once, with no lock held; it arranges for done to be called exactly
// once, with nil when the commit is durable, or with the error the client
// gets (a *kerr.Error, such as REQUEST_TIMED_OUT or NOT_COORDINATOR; any
// other error is NOT_COORDINATOR). done may be called before Pending
// returns, from any goroutine, with no lock of the store's held.
type Pending func(done func(error))

// StoredOffset is a committed offset as an OffsetStore keeps it. Its times
// are wall-clock times: they outlive the coordinator's clock.
type StoredOffset struct {
	TopicPartition
	Offset      int64
	LeaderEpoch int32 // -1: none
	Metadata    string
	Committed   time.Time
	// ExpireAt is the commit's own expiry (OffsetCommit v2-v4's
	// retention time); zero when offsets.retention.minutes applies.
	ExpireAt time.Time
	// Position orders the offset among its group's records: the offset
	// of its record in the partition, as a replay reads it (Kafka's
	// appendedBatchOffset). When a transaction commits, its offset of a
	// partition replaces the committed one only if its Position is not
	// lower. The coordinator leaves it zero in what it hands a store; a
	// store that cannot tell leaves it zero in what it loads, and a
	// loaded transaction's offset then wins.
	Position int64
}

// StoredTxnOffset is an offset committed in a transaction that had not
// ended when the partition was read (Kafka's pending transactional
// offset commit): a marker for ProducerID completes it (CompleteTxn).
type StoredTxnOffset struct {
	ProducerID int64
	StoredOffset
}

// StoredGroup is a group as an OffsetStore keeps it: its metadata (Kafka's
// GroupMetadataValue) and its offsets.
type StoredGroup struct {
	Group        string
	ProtocolType string
	Generation   int32
	Protocol     string    // "" outside a generation
	Leader       string    // "" without members
	StateSince   time.Time // when it entered its state; zero: unknown
	Members      []StoredMember
	Offsets      []StoredOffset
	// TxnOffsets are the offsets pending in open transactions, by
	// producer: not among the committed ones until their marker.
	TxnOffsets []StoredTxnOffset
}

// StoredMember is a member as its group's metadata keeps it (Kafka's
// MemberMetadata in GroupMetadataValue).
type StoredMember struct {
	MemberID         string
	InstanceID       string // "" for a dynamic member
	ClientID         string
	ClientHost       string
	RebalanceTimeout time.Duration
	SessionTimeout   time.Duration
	Subscription     []byte // its metadata for the group's protocol
	Assignment       []byte
}

// toWall returns the wall-clock time of d, a time on the coordinator's
// clock.
func (c *Coordinator) toWall(d time.Duration) time.Time { return c.wallOrigin.Add(d - c.clkOrigin) }

// fromWall returns the time on the coordinator's clock of t, a wall-clock
// time: before the clock's origin for a time before the coordinator
// started.
func (c *Coordinator) fromWall(t time.Time) time.Duration { return c.clkOrigin + t.Sub(c.wallOrigin) }

// stored returns o, committed to tp, as a store keeps it.
func (c *Coordinator) stored(tp TopicPartition, o *offset) StoredOffset {
	s := StoredOffset{TopicPartition: tp, Offset: o.offset, LeaderEpoch: o.leaderEpoch, Metadata: o.metadata,
		Committed: c.toWall(o.committed)}
	if o.explicit {
		s.ExpireAt = c.toWall(o.expireAt)
	}
	return s
}

// Load brings back groups, as Kafka's coordinator loads an offsets
// partition it came to lead (loadGroupsForPartition), with their protocol
// type, generation and offsets. A group stored with members comes back
// Stable with them, its protocol, leader and assignments, and each
// member's session starts afresh: a member that goes on heartbeating
// with its id and generation goes on without a rebalance, one that does
// not expires and the group rebalances, as after any session expiry.
// Static members come back with their instance ids. A group stored
// without members comes back Empty, Empty since now, its offsets' expiry
// armed: offsets past their expiry go at once, with the store told. The
// group "" is one too: Kafka takes commits to it. The offsets of open
// transactions come back pending, ordered against the committed ones by
// their Position, for CompleteTxn to end when the transactions' markers
// come (Kafka's loadGroup with its pending transactional offsets). A
// group without offsets, pending ones or members is not restored but
// deleted in the store: it is gone, as Kafka removes such a group. A
// group already here (it must not be: the caller loads a partition it
// unloaded) is replaced. It returns the number of groups loaded, or
// COORDINATOR_NOT_AVAILABLE once closed.
func (c *Coordinator) Load(groups []StoredGroup) (int, error) {
	restored := 0
	for _, sg := range groups {
		if c.closed.Load() {
			return restored, errNotAvailable
		}
		if len(sg.Offsets) == 0 && len(sg.Members) == 0 && len(sg.TxnOffsets) == 0 {
			if c.cfg.store != nil {
				if err := c.cfg.store.DeleteGroup(sg.Group, nil); err != nil {
					c.log.Warn("deleting a group without offsets", zap.String("group", sg.Group), zap.Error(err))
				}
			}
			continue
		}
		var a after
		g := newGroup(c, sg.Group)
		g.mu.Lock()
		g.ptype, g.gen = sg.ProtocolType, sg.Generation
		// The stored metadata is the group's: a commit need not carry its
		// protocol type.
		g.metaStored = sg.ProtocolType != ""
		switch {
		case len(sg.Members) > 0 && sg.Protocol != "":
			g.restoreMembersLocked(sg, &a)
			if n := len(g.members); n > c.cfg.maxSize {
				// group.max.size was lowered: a rebalance gives the
				// members a chance to commit, and keeps the first to
				// rejoin (Kafka's onLoaded).
				c.prepareRebalanceLocked(g, fmt.Sprintf("freshly-loaded group (size %d) is over capacity %d", n, c.cfg.maxSize), &a)
			}
		case len(sg.Members) > 0:
			// Members outside a generation: no writer stores that.
			c.log.Warn("a stored group's members have no protocol; loading it Empty", zap.String("group", sg.Group))
		}
		for _, so := range sg.Offsets {
			g.offsets[so.TopicPartition] = g.loadedLocked(so)
		}
		for _, st := range sg.TxnOffsets {
			g.addTxnLocked(st.ProducerID, st.TopicPartition, g.loadedLocked(st.StoredOffset))
		}
		c.mu.Lock()
		old := c.groups[g.id]
		c.groups[g.id] = g
		c.mu.Unlock()
		g.armExpiryLocked(&a)
		g.unlock()
		a.run()
		if old != nil {
			c.log.Warn("loaded a group that was here already", zap.String("group", g.id))
		}
		restored++
	}
	if restored > 0 {
		c.log.Info("loaded groups", zap.Int("groups", restored))
	}
	return restored, nil
}

// loadedLocked returns so as the group keeps it, placed after the group's
// records loaded before it by its position, and before any commit made
// from now on.
//
// REQUIRES: g.mu held.
func (g *group) loadedLocked(so StoredOffset) *offset {
	c := g.c
	o := &offset{offset: so.Offset, leaderEpoch: so.LeaderEpoch, metadata: so.Metadata, committed: c.fromWall(so.Committed),
		seq: uint64(max(so.Position, 0)) + 1}
	if !so.ExpireAt.IsZero() {
		o.expireAt, o.explicit = c.fromWall(so.ExpireAt), true
	}
	g.commits = max(g.commits, o.seq)
	return o
}

// restoreMembersLocked makes g, new and Empty, the Stable group of sg's
// members, each supporting the group's protocol alone with its stored
// subscription (as Kafka loads a member), and starts their sessions.
//
// REQUIRES: g.mu held.
func (g *group) restoreMembersLocked(sg StoredGroup, a *after) {
	for _, sm := range sg.Members {
		if (sm.InstanceID != "" && g.static[sm.InstanceID] != "") || g.members[sm.MemberID] != nil {
			g.c.log.Warn("a stored member is there twice", zap.String("group", g.id),
				zap.String("member", sm.MemberID), zap.String("instance", sm.InstanceID))
			continue
		}
		m := &member{
			id: sm.MemberID, instanceID: sm.InstanceID, clientID: sm.ClientID, clientHost: sm.ClientHost,
			protocols: []Protocol{{Name: sg.Protocol, Metadata: sm.Subscription}},
			session:   sm.SessionTimeout, rebalance: sm.RebalanceTimeout, assignment: sm.Assignment,
		}
		if m.rebalance <= 0 {
			m.rebalance = m.session // a v0 record has none
		}
		g.addLocked(m, sg.ProtocolType)
	}
	g.proto = sg.Protocol
	if g.members[sg.Leader] != nil {
		g.leader = sg.Leader
	}
	// Stable since now: an Empty group has no offset expiry armed yet,
	// and a Stable one has none to disarm.
	g.st, g.at = Stable, g.c.clk.Now()
	for _, m := range g.sortedMembersLocked() {
		g.c.scheduleSessionLocked(g, m, m.session, a)
	}
}

// storedMetaLocked returns g's metadata as a store keeps it, each member
// with assign's assignment for it (nil assign: its own).
//
// REQUIRES: g.mu held.
func (g *group) storedMetaLocked(assign map[string][]byte) StoredGroup {
	sg := StoredGroup{Group: g.id, ProtocolType: g.ptype, Generation: g.gen, Protocol: g.proto, Leader: g.leader,
		StateSince: g.c.toWall(g.at)}
	for _, m := range g.sortedMembersLocked() {
		as := m.assignment
		if assign != nil {
			as = assign[m.id]
		}
		sg.Members = append(sg.Members, StoredMember{
			MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			RebalanceTimeout: m.rebalance, SessionTimeout: m.session,
			Subscription: m.metadata(g.proto), Assignment: as,
		})
	}
	return sg
}

// storeGroupLocked appends g's metadata, each member with assign's
// assignment (nil: its own), and returns the wait for it: nil without a
// store. A refusal is logged and returned.
//
// REQUIRES: g.mu held.
func (g *group) storeGroupLocked(assign map[string][]byte) (Pending, error) {
	if g.c.cfg.store == nil {
		return nil, nil
	}
	p, err := g.c.cfg.store.Group(g.storedMetaLocked(assign))
	if err == nil {
		g.metaStored = true
	}
	return p, g.storeErr("group metadata", err)
}

// storeQuietlyLocked appends g's metadata, changed for why, and waits for
// nobody: a failure is logged, and the next rebalance stores the group
// again. Kafka's onCompleteJoin stores an Empty group so (a load must not
// bring back its last members), and a static member's new member id too.
//
// REQUIRES: g.mu held.
func (g *group) storeQuietlyLocked(why string, a *after) {
	p, err := g.storeGroupLocked(nil)
	if err != nil || p == nil {
		return
	}
	log, id := g.c.log, g.id
	a.do(func() {
		p(func(err error) {
			if err != nil {
				log.Warn("storing a group's metadata", zap.String("group", id), zap.String("why", why), zap.Error(err))
			}
		})
	})
}

// storeCommitLocked appends the offsets of reqs whose offs are not nil,
// and returns the wait for them: nil without a store or without such
// offsets. A refusal is logged and returned.
//
// REQUIRES: g.mu held.
func (g *group) storeCommitLocked(reqs []CommitOffset, offs []*offset) (Pending, error) {
	c := g.c
	if c.cfg.store == nil {
		return nil, nil
	}
	stored := make([]StoredOffset, 0, len(offs))
	for i, o := range offs {
		if o != nil {
			stored = append(stored, c.stored(TopicPartition{reqs[i].Topic, reqs[i].Partition}, o))
		}
	}
	if len(stored) == 0 {
		return nil, nil
	}
	ptype := g.ptype
	if g.metaStored {
		ptype = "" // the stored metadata says it, and more
	}
	p, err := c.cfg.store.Commit(g.id, ptype, stored)
	return p, g.storeErr("commit", err)
}

// storeTxnCommitLocked appends the offsets of req whose offs are not nil
// as producer's, and returns the wait for them: nil without a store or
// without such offsets. A refusal is logged and returned.
//
// REQUIRES: g.mu held.
func (g *group) storeTxnCommitLocked(req *TxnCommitRequest, offs []*offset) (Pending, error) {
	c := g.c
	if c.cfg.store == nil {
		return nil, nil
	}
	stored := make([]StoredOffset, 0, len(offs))
	for i, o := range offs {
		if o != nil {
			stored = append(stored, c.stored(TopicPartition{req.Offsets[i].Topic, req.Offsets[i].Partition}, o))
		}
	}
	if len(stored) == 0 {
		return nil, nil
	}
	p, err := c.cfg.store.TxnCommit(g.id, req.ProducerID, req.ProducerEpoch, stored)
	return p, g.storeErr("transactional commit", err)
}

// storeDeleteLocked records that the group's offsets of tps are gone.
//
// REQUIRES: g.mu held.
func (g *group) storeDeleteLocked(tps []TopicPartition) error {
	if g.c.cfg.store == nil || len(tps) == 0 {
		return nil
	}
	return g.storeErr("delete offsets", g.c.cfg.store.Delete(g.id, tps))
}

// storeGoneLocked records that the group is gone, with its offsets and
// the transactions' offsets pending (Kafka 4's deleteAllOffsets writes a
// tombstone of each).
//
// REQUIRES: g.mu held.
func (g *group) storeGoneLocked() error {
	if g.c.cfg.store == nil {
		return nil
	}
	tps := append(slices.Collect(maps.Keys(g.offsets)), g.txnPartitionsLocked()...)
	sortPartitions(tps)
	return g.storeErr("delete group", g.c.cfg.store.DeleteGroup(g.id, tps))
}

// storeErr logs a store's refusal and returns it.
func (g *group) storeErr(what string, err error) error {
	if err != nil {
		g.c.log.Warn("offset store refused a change", zap.String("group", g.id), zap.String("change", what), zap.Error(err))
	}
	return err
}

// sortPartitions sorts tps by topic, then partition: expired offsets come
// out of a map, and a store's records should not depend on its order.
func sortPartitions(tps []TopicPartition) {
	slices.SortFunc(tps, func(x, y TopicPartition) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
}
