package txn

import (
	"maps"
	"slices"

	"go.uber.org/zap"
)

// Load brings back the transactional ids of __transaction_state
// partition idx, replayed (r), which this broker now leads at leader
// epoch epoch, the coordinator epoch of the markers it writes (Kafka's
// loadTransactionsForTxnTopicPartition):
//
//   - a PrepareCommit or PrepareAbort has its markers written again, to
//     every partition of its transaction, and is then completed, as after
//     an EndTxn here; they are left to the timer, due at once, so that no
//     marker is written under the runtime's lock;
//   - an Ongoing transaction has its timeout armed afresh, from its start:
//     one past it is aborted at once;
//   - an idle id has its expiration armed, from its last change.
//
// The ids of the partition this coordinator still knew (loaded again
// without an Unload between, which the runtime does not do) are forgotten
// first, as Unload forgets them. It returns how many ids it loaded;
// ErrClosed once closed.
func (c *Coordinator) Load(idx, epoch int32, r *Replay) (int, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	p := &partition{idx: idx, epoch: epoch}
	ts := make([]*txn, 0, r.Len())
	for _, id := range slices.Sorted(maps.Keys(r.Values())) {
		ts = append(ts, c.newTxn(id, p, *r.Values()[id]))
	}
	var old []*txn
	c.mu.Lock()
	c.parts[idx] = p
	for id, o := range c.txns {
		if o.part.idx == idx {
			old = append(old, o)
			delete(c.txns, id)
		}
	}
	for _, t := range ts {
		c.txns[t.id] = t
	}
	c.mu.Unlock()
	var a after
	for _, o := range old {
		o.mu.Lock()
		o.forgetLocked(&a)
		o.mu.Unlock()
	}
	prepared := 0
	for _, t := range ts {
		t.mu.Lock()
		switch {
		case t.gone:
			// Closed, or unloaded again, meanwhile.
		case t.meta.state == PrepareCommit || t.meta.state == PrepareAbort:
			prepared++
			t.prepareCompleteLocked()
			t.setAlarmLocked(true, soon, &a)
		default:
			t.armLocked(soon, &a)
		}
		t.mu.Unlock()
	}
	a.run()
	c.zl.Info("loaded transactional ids", zap.Int32("partition", idx), zap.Int32("coordinator_epoch", epoch),
		zap.Int("transactional_ids", len(ts)), zap.Int("completing", prepared))
	return len(ts), nil
}

// Unload forgets the transactional ids of partition idx, which this
// broker no longer leads (Kafka's removeTransactionsForTxnTopicPartition):
// their timers are cancelled, the requests waiting for one of their writes
// are answered NOT_COORDINATOR, so that their clients find the new
// coordinator, and markers under way end without effect (the new
// coordinator writes them again once it loads the partition). It returns
// how many ids it forgot. inPartition is not needed: the coordinator
// knows each id's partition.
func (c *Coordinator) Unload(idx int32, _ func(key string) bool) int {
	c.mu.Lock()
	p := c.parts[idx]
	delete(c.parts, idx)
	var ts []*txn
	for id, t := range c.txns {
		if t.part.idx == idx {
			ts = append(ts, t)
			delete(c.txns, id)
		}
	}
	c.mu.Unlock()
	var a after
	for _, t := range ts {
		t.mu.Lock()
		t.forgetLocked(&a)
		t.mu.Unlock()
	}
	a.run()
	if p != nil {
		c.zl.Info("unloaded transactional ids", zap.Int32("partition", idx), zap.Int32("coordinator_epoch", p.epoch),
			zap.Int("transactional_ids", len(ts)))
	}
	return len(ts)
}
