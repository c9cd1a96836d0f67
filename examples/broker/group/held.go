package group

// A group may be held by another protocol: in the broker, a KIP-848
// consumer group keeps its committed offsets here, in an Empty group of
// its id (package consumergroup), since Kafka keeps one offset manager
// for both protocols. Kafka expires a consumer group's offsets only for
// the topics it does not subscribe to (OffsetMetadataManager's
// cleanupExpiredOffsets, with the consumer group's condition: the commit
// time plus offsets.retention.minutes); here, where a consumer group's
// subscriptions are not known, that is: none while it has members (held,
// WithHeld), all once it has none. The Empty group's OffsetExpiration
// operation is not armed while it is held, and Release arms it when the
// consumer group loses its last member: offsets past their retention
// then expire at once, the others when they pass it, and the group is
// deleted once none is left (WithOnExpired tells the broker, which
// deletes the consumer group with it).
//
// Lock order: a group's mutex, then whatever held takes (the consumer
// group coordinator's locks, which never call into this package).

// heldLocked reports whether another protocol holds g (WithHeld).
//
// REQUIRES: g.mu held.
func (g *group) heldLocked() bool { return g.c.cfg.held != nil && g.c.cfg.held(g.id) }

// Release tells the coordinator that group may no longer be held
// (WithHeld is asked again): if it is Empty and is not, its offsets start
// expiring. It reports whether the group keeps offsets, committed or on
// their way (a commit not yet durable, a transaction's), which the
// broker's consumer group outlives. O(the group's offsets).
func (c *Coordinator) Release(group string) (offsets bool) {
	var a after
	g, _ := c.lockGroup(group, false, &a)
	if g == nil {
		a.run()
		return false
	}
	g.armExpiryLocked(&a)
	offsets = len(g.offsets) > 0 || len(g.txns) > 0 || len(g.pendingCommits) > 0
	g.unlock()
	a.run()
	return offsets
}
