package txn

import (
	"errors"
	"maps"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// EndTxn commits or aborts the producer's transaction (Kafka's
// handleEndTransaction, EndTxn v0-v4: transaction version 1; v5 is
// EndTxnV2's), and calls respond once, from any goroutine.
//
// An Ongoing transaction is answered once its PrepareCommit or
// PrepareAbort is written: it will complete whatever happens to this
// coordinator, since the next one loads it and writes its markers. Then
// the markers are written to every partition of the transaction
// (Config.Markers), those that fail again after Config.RetryBackoff, and
// once all are, CompleteCommit or CompleteAbort is written; meanwhile the
// id's requests are CONCURRENT_TRANSACTIONS.
//
// A retry of an EndTxn that completed (CompleteCommit and commit,
// CompleteAbort and abort) succeeds at once. Errors, as Kafka's
// transaction version 1: INVALID_REQUEST (an empty id),
// INVALID_PRODUCER_ID_MAPPING (no such id, another producer id),
// PRODUCER_FENCED (another epoch; the handler answers
// INVALID_PRODUCER_EPOCH before v2, as Kafka), CONCURRENT_TRANSACTIONS
// (a write or markers under way), INVALID_TXN_STATE (nothing to end:
// Empty, abort or commit of a transaction that completed the other way;
// a Prepare whose markers are not under way the other way),
// NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) EndTxn(txnID string, producerID int64, epoch int16, commit bool, respond func(err *kerr.Error)) {
	if txnID == "" {
		respond(kerr.InvalidRequest)
		return
	}
	t, err := c.lockTxn(txnID)
	if t == nil {
		if err == nil {
			err = errMapping
		}
		respond(err)
		return
	}
	var a after
	c.endLocked(t, producerID, epoch, commit, true, respond, &a)
	t.mu.Unlock()
	a.run()
}

// endLocked is Kafka's endTransaction: it ends t's transaction of pid at
// epoch. fromClient is false for the coordinator's own aborts (a fence,
// a timeout), whose epoch is the bumped one, pending as t's
// PrepareEpochFence. answer, which may be nil, is answered through a, or
// once the Prepare is written.
//
// REQUIRES: t.mu held.
func (c *Coordinator) endLocked(t *txn, pid int64, epoch int16, commit, fromClient bool, answer func(*kerr.Error), a *after) {
	reply := func(err *kerr.Error) {
		if answer != nil {
			a.do(func() { answer(err) })
		}
	}
	m := &t.meta
	fencing := t.pending != nil && t.pending.state == PrepareEpochFence
	switch {
	case m.pid != pid:
		reply(errMapping)
		return
	case (fromClient && epoch != m.epoch) || epoch < m.epoch:
		reply(errFenced)
		return
	case t.pending != nil && !fencing:
		reply(errConcurrent)
		return
	}
	invalid := func() {
		c.zl.Debug("no transaction to end that way", zap.String("transactional_id", t.id),
			zap.Stringer("state", m.state), zap.Bool("commit", commit))
		reply(errState)
	}
	switch m.state {
	case Ongoing:
	case CompleteCommit, CompleteAbort:
		if commit == (m.state == CompleteCommit) {
			reply(nil) // a retry of what completed
		} else {
			invalid()
		}
		return
	case PrepareCommit, PrepareAbort:
		// Their markers are under way (a pending completion answers
		// CONCURRENT_TRANSACTIONS above); this is for safety.
		if commit == (m.state == PrepareCommit) {
			reply(errConcurrent)
		} else {
			invalid()
		}
		return
	default: // Empty; Dead and PrepareEpochFence are never a resting state
		invalid()
		return
	}
	state := PrepareAbort
	if commit {
		state = PrepareCommit
	}
	if fencing {
		// The fence's epoch takes effect now, in memory, whatever
		// becomes of the write (Kafka's endTransaction for an epoch
		// fence): the old producer is fenced from here on.
		t.pending = nil
		m.epoch, m.lastEpoch = epoch, noEpoch
	}
	n := m.transition(state, c.nowMs())
	switch {
	case fromClient:
		n.tv2 = false // EndTxn v4 and before: the producer runs version 1
	case fencing && n.tv2 && n.epoch < math.MaxInt16:
		// A version 2 transaction's abort bumps the epoch again, as
		// every end of its does (Kafka's prepareAbortOrCommit after
		// the fence's bump): its producer's EndTxn, one short of it,
		// is fenced rather than taken for a retry of this end.
		n.epoch++
	}
	t.answer = answer
	t.writeLocked(n, a, func(err *kerr.Error, a *after) {
		if err != nil {
			if fencing {
				// Not bumped again by the next fence: the bump was
				// never handed to a producer.
				t.fenceFailed = true
			}
			t.dropLocked(a)
			t.answerLocked(err, a)
			return
		}
		t.fenceFailed = false
		t.answerLocked(nil, a)
		t.startMarkersLocked(a)
	})
}

// fenceLocked aborts t's Ongoing transaction at a bumped epoch, so that
// its producer is fenced (Kafka's prepareFenceProducerEpoch, then
// endTransaction with the abort): for an InitProducerID that finds it
// under way, and at its timeout. answer, which may be nil, gets the
// abort's result once its PrepareAbort is written.
//
// REQUIRES: t.mu held; t Ongoing with no pending transition.
func (c *Coordinator) fenceLocked(t *txn, answer func(*kerr.Error), a *after) {
	m := t.meta
	fence := m.transition(PrepareEpochFence, m.updated)
	fence.lastEpoch = noEpoch
	if !t.fenceFailed && m.epoch < math.MaxInt16 {
		// Never MaxInt16 while Ongoing but for a version 2 producer
		// answered a retry of a fenced end (end_v2.go): an exhausted
		// epoch rotates the producer id at InitProducerID, and at a
		// version 2 end.
		fence.epoch++
	}
	t.pending = &fence
	c.endLocked(t, m.pid, fence.epoch, false, false, answer, a)
	if t.pending == &fence {
		t.pending = nil // for safety: endLocked always takes it
	}
}

// sending is a transaction's markers being written: from its Prepare,
// written, to its Complete, written.
type sending struct {
	marker Marker
	// left is the partitions whose marker is not written yet.
	left partitions
	// completing is set once every marker is written: the completion's
	// write is under way, or is retried.
	completing bool
}

// startMarkersLocked starts writing the markers of t's PrepareCommit or
// PrepareAbort, just written.
//
// REQUIRES: t.mu held; t in a Prepare state with no pending transition.
func (t *txn) startMarkersLocked(a *after) { t.sendLocked(t.prepareCompleteLocked(), a) }

// prepareCompleteLocked readies the markers of t's PrepareCommit or
// PrepareAbort, written or loaded (Kafka's prepareComplete): from here
// the completion is t's pending transition until it is written.
//
// REQUIRES: t.mu held; t in a Prepare state with no pending transition.
func (t *txn) prepareCompleteLocked() *sending {
	m := &t.meta
	done := m.transition(CompleteAbort, t.c.nowMs())
	if m.state == PrepareCommit {
		done.state = CompleteCommit
	}
	done.parts = nil
	if m.rotating {
		// A version 2 end whose epochs were exhausted: the markers
		// carry the old producer id at its last epoch, and the id moves
		// to the new one (Kafka's prepareComplete).
		done.pid, done.epoch = m.nextPID, 0
	}
	t.pending = &done
	s := &sending{marker: Marker{ProducerID: m.pid, ProducerEpoch: m.epoch, CoordinatorEpoch: t.part.epoch,
		Commit: m.state == PrepareCommit}, left: maps.Clone(m.parts)}
	t.send = s
	return s
}

// sendLocked writes the markers left, through a; with none left, the
// completion.
//
// REQUIRES: t.mu held; t.send is s.
func (t *txn) sendLocked(s *sending, a *after) {
	if len(s.left) == 0 {
		t.completeLocked(s, a)
		return
	}
	parts := s.left.sorted()
	w := t.c.cfg.Markers
	a.do(func() {
		w.WriteMarkers(s.marker, parts, func(res map[TopicPartition]error) { t.markersWritten(s, parts, res) })
	})
}

// markersWritten takes the results of the markers written to parts:
// those written, and those whose topic is gone, are done; the others are
// written again after the backoff; with none left, the completion is
// written.
func (t *txn) markersWritten(s *sending, parts []TopicPartition, res map[TopicPartition]error) {
	c := t.c
	var a after
	t.mu.Lock()
	defer func() {
		t.mu.Unlock()
		a.run()
	}()
	if t.gone || t.send != s {
		return // forgotten: the partition's next coordinator writes them
	}
	failed := 0
	for _, tp := range parts {
		err, ok := res[tp]
		switch {
		case ok && err == nil:
			delete(s.left, tp)
		case errors.Is(err, ErrPartitionGone):
			c.zl.Info("a transaction's partition is gone: no marker for it", zap.String("transactional_id", t.id),
				zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition))
			delete(s.left, tp)
		default:
			failed++
			c.zl.Debug("a transaction marker was not written; retrying", zap.String("transactional_id", t.id),
				zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.Error(err))
		}
	}
	if failed > 0 {
		t.setAlarmLocked(true, c.cfg.RetryBackoff, &a)
		return
	}
	if len(s.left) == 0 {
		t.completeLocked(s, &a)
	}
}

// completeLocked writes the completion pending since the markers began;
// one that fails is written again after the backoff (Kafka retries it
// too), until it is, or t is forgotten.
//
// REQUIRES: t.mu held; t.send is s and its markers are all written.
func (t *txn) completeLocked(s *sending, a *after) {
	s.completing = true
	t.writeLocked(*t.pending, a, func(err *kerr.Error, a *after) {
		if err != nil {
			t.setAlarmLocked(true, t.c.cfg.RetryBackoff, a)
			return
		}
		t.send = nil // writeLocked wakes what waits for the completion
	})
}

// onRetry writes the markers left, or the completion, again.
func (t *txn) onRetry(al *alarm) {
	var a after
	t.mu.Lock()
	if s := t.send; s != nil && !t.gone && t.retry == al {
		t.retry = nil
		if s.completing {
			t.completeLocked(s, &a)
		} else {
			t.sendLocked(s, &a)
		}
	}
	t.mu.Unlock()
	a.run()
}
