package txn

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// Transaction version 2 (KIP-890 part 2): every end of a transaction
// bumps the producer's epoch, so that a late batch or a late EndTxn of
// the transaction that ended, at the old epoch, cannot land in the next
// one. The Prepare is written at epoch+1, the markers carry it (the
// partitions take the producer to it: package storage), and the producer
// is answered the epoch, and the producer id, of its next transaction.
// Once the epochs are exhausted, the Prepare names the producer id to
// move to (Kafka's nextProducerId), the markers carry the old id at its
// last epoch, and the Complete moves the id to the new one at epoch 0.
//
// Since the same epoch no longer means "the transaction that just
// ended", an EndTxn at the epoch the id is at now ends the next
// transaction, and one at the epoch before is the retry of the end that
// bumped it (Kafka's endTxnEpochBumped), or of the one that rotated the
// producer id (the old id at its last epoch, the id now at epoch 0).

// EndTxnV2 is EndTxn for a producer running transaction version 2
// (EndTxn v5+; Kafka's handleEndTransaction with transaction version 2),
// and calls respond once, from any goroutine, with the producer id and
// epoch of the producer's next transaction, or with an error (then -1,
// -1).
//
//   - An Ongoing transaction is prepared at epoch+1 (with a new producer id
//     to move to once the epochs are exhausted), answered once that is
//     written, and completed as EndTxn's.
//   - Empty, CompleteCommit or CompleteAbort, at the id's epoch: an abort
//     is an empty transaction's, which succeeds and bumps the epoch
//     (a producer whose produces all failed aborts to be sure none was
//     added); a commit is INVALID_TXN_STATE.
//   - CompleteCommit or CompleteAbort at the epoch before the id's (or the
//     producer id before a rotation at its last epoch): a retry, answered
//     the id's producer id and epoch if it ended the same way, else
//     INVALID_TXN_STATE.
//
// Errors, as Kafka's transaction version 2: INVALID_REQUEST (an empty
// id), INVALID_PRODUCER_ID_MAPPING (no such id, another producer id),
// PRODUCER_FENCED (any other epoch: a Complete takes only its own and the
// retry's), CONCURRENT_TRANSACTIONS (a write or markers under way, checked
// first: the producer may already use the epoch, or the producer id, that
// they complete to),
// INVALID_TXN_STATE, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE (also
// when no producer id can be had for a rotation).
func (c *Coordinator) EndTxnV2(txnID string, producerID int64, epoch int16, commit bool,
	respond func(producerID int64, epoch int16, err *kerr.Error)) {
	fail := func(err *kerr.Error) { respond(noProducerID, noEpoch, err) }
	if txnID == "" {
		fail(kerr.InvalidRequest)
		return
	}
	// fresh is a producer id fetched, with no lock held, for an end whose
	// epochs are exhausted; unused, it is lost, as Kafka loses one.
	fresh := int64(noProducerID)
	for {
		t, err := c.lockTxn(txnID)
		if t == nil {
			if err == nil {
				err = errMapping
			}
			fail(err)
			return
		}
		var a after
		needID := c.endV2Locked(t, producerID, epoch, commit, fresh, respond, &a)
		t.mu.Unlock()
		a.run()
		if !needID {
			return
		}
		if fresh, err = c.producerID(txnID); err != nil {
			fail(err)
			return
		}
	}
}

// endV2Locked is EndTxnV2 on t. It reports needID when the epochs are
// exhausted and fresh holds no producer id: the caller fetches one with no
// lock held and calls again. Otherwise respond is answered, through a or
// once the Prepare is written.
//
// REQUIRES: t.mu held.
func (c *Coordinator) endV2Locked(t *txn, pid int64, epoch int16, commit bool, fresh int64,
	respond func(int64, int16, *kerr.Error), a *after) (needID bool) {
	m := &t.meta
	reply := func(err *kerr.Error) {
		if err != nil {
			a.do(func() { respond(noProducerID, noEpoch, err) })
			return
		}
		id, e := m.pid, m.epoch
		a.do(func() { respond(id, e, nil) })
	}
	// The retries of an end that bumped the epoch, or rotated the
	// producer id, are told by the metadata's version, as Kafka's: a
	// version 1 end never bumped.
	bumped := m.tv2 && epoch < math.MaxInt16 && m.epoch == epoch+1
	rotated := m.tv2 && m.lastPID == pid && m.pid != pid && epoch == math.MaxInt16-1 && m.epoch == 0
	retry := bumped || rotated
	valid := epoch == m.epoch
	if m.tv2 {
		switch m.state {
		case PrepareCommit, PrepareAbort:
			valid = bumped
		case CompleteCommit, CompleteAbort:
			valid = valid || retry
		}
	}
	switch {
	case t.pending != nil:
		// First, as Kafka 4 checks it: while the previous end's markers
		// are written, the id's epoch (or producer id) is that end's,
		// which the producer was answered and already uses; it retries
		// once the end completes.
		reply(errConcurrent)
		return false
	case m.pid != pid && !rotated:
		reply(errMapping)
		return false
	case !valid:
		reply(errFenced)
		return false
	}
	invalid := func() {
		c.zl.Debug("no transaction to end that way", zap.String("transactional_id", t.id),
			zap.Stringer("state", m.state), zap.Bool("commit", commit), zap.Bool("retry", retry))
		reply(errState)
	}
	switch m.state {
	case Ongoing:
	case CompleteCommit, CompleteAbort:
		switch {
		case retry && commit == (m.state == CompleteCommit):
			reply(nil) // a retry of what completed: the epoch it gave
			return false
		case retry || commit:
			invalid()
			return false
		}
		// An abort at the id's epoch: an empty transaction's.
	case Empty:
		if commit {
			invalid()
			return false
		}
	case PrepareCommit, PrepareAbort:
		// Their markers are under way (a pending completion answers
		// CONCURRENT_TRANSACTIONS above); this is for safety.
		if commit == (m.state == PrepareCommit) {
			reply(errConcurrent)
		} else {
			invalid()
		}
		return false
	default: // Dead and PrepareEpochFence are never a resting state
		invalid()
		return false
	}
	state := PrepareAbort
	if commit {
		state = PrepareCommit
	}
	now := c.nowMs()
	n := m.transition(state, now)
	n.tv2 = true
	if m.state != Ongoing {
		// An empty transaction: it starts as it ends (Kafka's
		// noPartitionAdded), with nothing to mark.
		n.start, n.parts = now, nil
	}
	// Kafka's prepareAbortOrCommit: epoch+1, remembering the producer's
	// epoch for a KIP-360 InitProducerID that lost this answer.
	n.lastEpoch = m.epoch
	if m.epoch < math.MaxInt16 {
		n.epoch = m.epoch + 1
	}
	if epochExhausted(m.epoch) {
		if fresh == noProducerID {
			return true
		}
		n.rotating, n.nextPID = true, fresh
	}
	// The answer is the epoch of the producer's next transaction: the
	// Complete's (prepareCompleteLocked).
	nextPID, nextEpoch := n.pid, n.epoch
	if n.rotating {
		nextPID, nextEpoch = n.nextPID, 0
	}
	t.answer = func(err *kerr.Error) {
		if err != nil {
			respond(noProducerID, noEpoch, err)
			return
		}
		respond(nextPID, nextEpoch, nil)
	}
	t.writeLocked(n, a, func(err *kerr.Error, a *after) {
		if err != nil {
			t.dropLocked(a)
			t.answerLocked(err, a)
			return
		}
		t.answerLocked(nil, a)
		t.startMarkersLocked(a)
	})
	return false
}
