package group

import (
	"cmp"
	"slices"
	"time"

	"go.uber.org/zap"
)

// An OffsetStore keeps what the coordinator must find again when it
// restarts: each group's committed offsets, and its protocol type, which
// decides how they expire (KIP-211). Membership is not kept: members rejoin
// a restarted coordinator, as Kafka's rejoin a coordinator that moved.
// WithOffsetStore sets one; package offsetlog keeps them in a file.
//
// The coordinator calls it with the group's mutex held, in the order the
// changes happen, and applies a commit or a deletion only once the store
// took it, so that what a client was told is committed is in the store
// (as durable as the store makes it). A store must therefore not call back
// into the coordinator, and should be quick. Different groups' changes
// come concurrently: a store guards itself.
type OffsetStore interface {
	// Load returns every group stored, when New restores them.
	Load() ([]StoredGroup, error)
	// Commit records offsets committed to group, whose protocol type is
	// protocolType ("" for a group that never had members).
	Commit(group, protocolType string, offsets []StoredOffset) error
	// Delete records that group's offsets of partitions are gone,
	// deleted (OffsetDelete) or expired.
	Delete(group string, partitions []TopicPartition) error
	// DeleteGroup records that group is gone with all its offsets.
	DeleteGroup(group string) error
}

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

// StoredGroup is a group as an OffsetStore returns it.
type StoredGroup struct {
	Group        string
	ProtocolType string
	Offsets      []StoredOffset
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

// restore brings back the groups of the store, each Empty, Empty since now
// (its members left when the coordinator stopped), with its protocol type
// and offsets, its offsets' expiry armed: offsets past their expiry go at
// once, with the store told. The group "" is one too: Kafka takes commits
// to it. A group without offsets is not restored but deleted from the
// store: Empty and without offsets, it is gone, as Kafka removes such a
// group, and its record would otherwise outlive every compaction.
func (c *Coordinator) restore() error {
	groups, err := c.cfg.store.Load()
	if err != nil {
		return err
	}
	restored := 0
	for _, sg := range groups {
		if len(sg.Offsets) == 0 {
			if err := c.cfg.store.DeleteGroup(sg.Group); err != nil {
				return err
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
		c.groups[g.id] = g
		c.mu.Unlock()
		g.armExpiryLocked(&a)
		g.unlock()
		a.run()
		restored++
	}
	c.log.Info("restored groups' committed offsets", zap.Int("groups", restored))
	return nil
}

// storeCommitLocked records the offsets of reqs whose offs are not nil:
// nothing to do without a store or without such offsets. A refusal is
// logged and returned.
//
// REQUIRES: g.mu held.
func (g *group) storeCommitLocked(reqs []CommitOffset, offs []*offset) error {
	c := g.c
	if c.cfg.store == nil {
		return nil
	}
	stored := make([]StoredOffset, 0, len(offs))
	for i, o := range offs {
		if o != nil {
			stored = append(stored, c.stored(TopicPartition{reqs[i].Topic, reqs[i].Partition}, o))
		}
	}
	if len(stored) == 0 {
		return nil
	}
	return g.storeErr("commit", c.cfg.store.Commit(g.id, g.ptype, stored))
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

// storeGoneLocked records that the group is gone.
//
// REQUIRES: g.mu held.
func (g *group) storeGoneLocked() error {
	if g.c.cfg.store == nil {
		return nil
	}
	return g.storeErr("delete group", g.c.cfg.store.DeleteGroup(g.id))
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
