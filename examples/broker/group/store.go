package group

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"
)

// An OffsetStore keeps what the coordinator must find again when it
// moves or restarts: each group's committed offsets, and its protocol
// type, which decides how they expire (KIP-211). Membership is not kept:
// members rejoin a coordinator that moved, as Kafka's do. WithOffsetStore
// sets one; the broker's appends to the group's partition of
// __consumer_offsets.
//
// The coordinator calls it with the group's mutex held, in the order the
// changes happen, so each call must be quick and must not call back into
// the coordinator: it appends the change (to the leader's log) and
// returns. A commit is not durable yet when Commit returns: it is pending
// until its record is replicated, which the coordinator waits for with no
// lock held (Pending), and only then is the offset visible to
// FetchOffsets and the client told it is committed (Kafka's pending
// offset commits, acks=-1). Deletions and expiries are tombstones appended
// without a wait, as Kafka appends them. Different groups' changes come
// concurrently: a store guards itself.
type OffsetStore interface {
	// Commit appends offsets committed to group, whose protocol type is
	// protocolType ("" for a group that never had members), and returns
	// the wait for them to be durable. An error means nothing was
	// appended (this broker no longer leads the group's partition, say);
	// the client is answered the *kerr.Error it wraps (such as
	// COORDINATOR_NOT_AVAILABLE), or NOT_COORDINATOR.
	Commit(group, protocolType string, offsets []StoredOffset) (Pending, error)
	// Delete appends that group's offsets of partitions are gone,
	// deleted (OffsetDelete) or expired.
	Delete(group string, partitions []TopicPartition) error
	// DeleteGroup appends that group is gone with its offsets of
	// partitions.
	DeleteGroup(group string, partitions []TopicPartition) error
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
// partition it came to lead (loadGroupsForPartition): each Empty, Empty
// since now (its members rejoin, as they rejoin a coordinator that
// moved), with its protocol type and offsets, its offsets' expiry armed:
// offsets past their expiry go at once, with the store told. The group ""
// is one too: Kafka takes commits to it. A group without offsets is not
// restored but deleted in the store: Empty and without offsets, it is
// gone, as Kafka removes such a group. A group already here (it must not
// be: the caller loads a partition it unloaded) is replaced. It returns
// the number of groups loaded, or COORDINATOR_NOT_AVAILABLE once closed.
func (c *Coordinator) Load(groups []StoredGroup) (int, error) {
	restored := 0
	for _, sg := range groups {
		if c.closed.Load() {
			return restored, errNotAvailable
		}
		if len(sg.Offsets) == 0 {
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
		g.ptype = sg.ProtocolType
		for _, so := range sg.Offsets {
			o := &offset{offset: so.Offset, leaderEpoch: so.LeaderEpoch, metadata: so.Metadata, committed: c.fromWall(so.Committed)}
			if !so.ExpireAt.IsZero() {
				o.expireAt, o.explicit = c.fromWall(so.ExpireAt), true
			}
			g.offsets[so.TopicPartition] = o
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
		c.log.Info("loaded groups' committed offsets", zap.Int("groups", restored))
	}
	return restored, nil
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
	p, err := c.cfg.store.Commit(g.id, g.ptype, stored)
	return p, g.storeErr("commit", err)
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

// storeGoneLocked records that the group is gone, with its offsets.
//
// REQUIRES: g.mu held.
func (g *group) storeGoneLocked() error {
	if g.c.cfg.store == nil {
		return nil
	}
	tps := slices.Collect(maps.Keys(g.offsets))
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
