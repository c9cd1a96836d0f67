package txn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/timer"
)

// Each transactional id has at most one deadline on the coordinator's
// timer (txn.deadline):
//
//   - while Ongoing, its transaction's timeout, from the transaction's
//     start: the coordinator then aborts it at a bumped epoch, fencing
//     its producer (Kafka's abortTimedOutTransactions, which scans every
//     transaction.abort.timed.out.transaction.cleanup.interval.ms);
//   - while Empty, CompleteCommit or CompleteAbort, its expiration,
//     Config.IDExpiration after its last change: its tombstone is written
//     and it is forgotten (Kafka's removeExpiredTransactionalIds, which
//     scans every transaction.remove.expired.transaction.cleanup.interval.ms).
//
// and at most one retry (txn.retry), while its markers or its completion
// wait to be written again. The deadline is set anew whenever a write ends
// (and at Load), for the state the id is in then; while a write is under
// way there is none, and its end sets it. No sweep looks at every id: a
// timeout or an expiration costs O(1) on the timer, whatever the number
// of ids.
//
// Each setting is an alarm of its own, a timer task. It is cancelled
// under the id's mutex when replaced (Cancel never runs a task), but
// scheduled once the mutex is released (through an after): a timer runs
// a task that is due at once, or whose bucket an advance passed
// meanwhile, inside Schedule when it has no workers (a manual clock), and
// the task takes the mutex. An alarm scheduled after the one that replaced
// it (a race between two sections' afters) runs without effect: it is not
// the id's current one. A stale alarm costs its task until its deadline.

// alarm is one setting of a transactional id's deadline or retry.
type alarm struct {
	task  timer.Task
	t     *txn
	retry bool
}

// Run runs the alarm if it is still its id's current one.
func (al *alarm) Run() {
	if al.retry {
		al.t.onRetry(al)
	} else {
		al.t.onDeadline(al)
	}
}

// setAlarmLocked replaces t's deadline (or retry) with one due after d,
// scheduled through a, with no lock held.
//
// REQUIRES: t.mu held.
func (t *txn) setAlarmLocked(retry bool, d time.Duration, a *after) {
	slot := &t.deadline
	if retry {
		slot = &t.retry
	}
	if *slot != nil {
		t.c.tm.Cancel(&(*slot).task)
	}
	al := &alarm{t: t, retry: retry}
	al.task.Init(al)
	*slot = al
	tm := t.c.tm
	a.do(func() { _ = tm.Schedule(&al.task, d) }) // fails only once closed
}

// cancelAlarmsLocked cancels t's deadline and retry.
//
// REQUIRES: t.mu held.
func (t *txn) cancelAlarmsLocked() {
	for _, al := range []*alarm{t.deadline, t.retry} {
		if al != nil {
			t.c.tm.Cancel(&al.task)
		}
	}
	t.deadline, t.retry = nil, nil
}

// armLocked sets t's deadline for its state, or none. A deadline already
// past is due after least (at least soon): on the timer's next tick once a
// write succeeded or at a load, after the retry backoff once one failed,
// so that a log that refuses writes does not have a timed-out
// transaction's abort retried in a loop.
//
// REQUIRES: t.mu held.
func (t *txn) armLocked(least time.Duration, a *after) {
	c := t.c
	if t.gone {
		return
	}
	due, ok := t.dueLocked()
	if !ok || t.pending != nil {
		if t.deadline != nil {
			c.tm.Cancel(&t.deadline.task)
			t.deadline = nil
		}
		return
	}
	d := time.Duration(due-c.nowMs()) * time.Millisecond
	t.setAlarmLocked(false, max(d, least, soon), a)
}

// dueLocked returns the wall-clock ms t's deadline is due at, if its
// state has one.
//
// REQUIRES: t.mu held.
func (t *txn) dueLocked() (int64, bool) {
	m := &t.meta
	switch m.state {
	case Ongoing:
		return m.start + int64(m.timeoutMs), true
	case Empty, CompleteCommit, CompleteAbort:
		return m.updated + t.c.cfg.IDExpiration.Milliseconds(), true
	}
	return 0, false
}

// onDeadline aborts t's transaction if it has timed out, or expires t if
// it has been idle too long; an early run (the clock's ticks round) sets
// the deadline again.
func (t *txn) onDeadline(al *alarm) {
	c := t.c
	var a after
	t.mu.Lock()
	defer func() {
		t.mu.Unlock()
		a.run()
	}()
	if t.gone || t.deadline != al {
		return // replaced
	}
	t.deadline = nil
	if t.pending != nil {
		return // its end sets the deadline again
	}
	due, ok := t.dueLocked()
	switch {
	case !ok:
	case c.nowMs() < due:
		t.armLocked(soon, &a)
	case t.meta.state == Ongoing:
		c.zl.Info("aborting a transaction that timed out, fencing its producer", zap.String("transactional_id", t.id),
			zap.Int64("producer_id", t.meta.pid), zap.Int16("epoch", t.meta.epoch),
			zap.Duration("timeout", time.Duration(t.meta.timeoutMs)*time.Millisecond))
		c.fenceLocked(t, nil, &a)
	default:
		t.expireLocked(&a)
	}
}

// expireLocked writes t's tombstone and forgets it once it is durable
// (Kafka's prepareDead). A tombstone that cannot be written is tried again
// after expireRetry.
//
// REQUIRES: t.mu held; t idle, with no pending transition.
func (t *txn) expireLocked(a *after) {
	c := t.c
	c.zl.Info("transactional id expired", zap.String("transactional_id", t.id), zap.Int64("producer_id", t.meta.pid),
		zap.Stringer("state", t.meta.state))
	dead := t.meta.transition(Dead, c.nowMs())
	dead.parts = nil
	t.writeLocked(dead, a, func(err *kerr.Error, a *after) {
		if err != nil {
			t.pending = nil
			t.setAlarmLocked(false, expireRetry, a)
			return
		}
		c.mu.Lock()
		if c.txns[t.id] == t {
			delete(c.txns, t.id)
		}
		c.mu.Unlock()
		t.forgetLocked(a)
	})
}
