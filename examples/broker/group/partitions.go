package group

import (
	"maps"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// WithOwner tells the coordinator which groups it coordinates now: one
// for which owns is false is not created (its requests are answered
// NOT_COORDINATOR), as Kafka's coordinator serves only the groups of the
// __consumer_offsets partitions it leads. owns is called with the
// coordinator's map locked: it must be quick and take no lock the
// coordinator's callers hold. Without it, the coordinator owns every group.
func WithOwner(owns func(group string) bool) Option {
	return optionFunc(func(c *config) { c.owns = owns })
}

// Unload forgets every group for which belongs is true, as Kafka's
// coordinator unloads the groups of an offsets partition it stopped
// leading (removeGroupsForPartition): every JoinGroup and SyncGroup
// waiting on them is answered NOT_COORDINATOR, so that clients find the
// new coordinator; their members' sessions, delayed joins and syncs and
// offset expirations end without effect. Committed offsets are not
// touched in the store: the new coordinator loads them. It returns how
// many groups were unloaded. The caller makes belongs's groups unowned
// first (WithOwner), so that none is created again meanwhile.
// O(groups + members of the unloaded).
func (c *Coordinator) Unload(belongs func(group string) bool) int {
	c.mu.Lock()
	var gs []*group
	for id, g := range c.groups {
		if belongs(id) {
			gs = append(gs, g)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(gs, func(x, y *group) int { return strings.Compare(x.id, y.id) })
	n := 0
	for _, g := range gs {
		var a after
		g.mu.Lock()
		if g.st != Dead {
			for _, id := range slices.Sorted(maps.Keys(g.members)) {
				m := g.members[id]
				g.answerJoinLocked(m, JoinResult{Err: errNotCoord, MemberID: m.id, Generation: -1}, &a)
				g.answerSyncLocked(m, SyncResult{Err: errNotCoord}, &a)
			}
			// The rebalance and the sync wait end without effect.
			g.join, g.syncOp = nil, nil
			c.killLocked(g, &a)
			n++
		}
		g.unlock()
		a.run()
	}
	if n > 0 {
		c.log.Info("unloaded groups", zap.Int("groups", n))
	}
	return n
}
