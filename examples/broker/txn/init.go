package txn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// InitProducerID gives the producer of txnID its producer id and epoch
// (Kafka's handleInitProducerId), and calls respond once, from any
// goroutine, with them or with an error (then -1, -1). producerID and
// producerEpoch are the producer's current ones (KIP-360, InitProducerId
// v3+), or -1 and -1.
//
//   - A new id gets a new producer id at epoch 0, written before it is
//     answered.
//   - An id with no transaction under way (Empty, CompleteCommit,
//     CompleteAbort) gets its epoch bumped, fencing its earlier producer,
//     or a new producer id at epoch 0 once the epochs are exhausted.
//   - An Ongoing transaction is aborted first, at a bumped epoch that
//     fences its producer (PrepareEpochFence, then PrepareAbort and its
//     markers); the answer is CONCURRENT_TRANSACTIONS, and the producer's
//     retry bumps the epoch again.
//   - With producerID and producerEpoch, they must be the id's current
//     ones, or the ones before a bump whose answer the producer missed
//     (which is answered again, the same), else PRODUCER_FENCED.
//
// Errors: INVALID_REQUEST (an empty id, one of producerID and
// producerEpoch -1 but not both), INVALID_TRANSACTION_TIMEOUT (timeout not
// in (0, MaxTimeout]), CONCURRENT_TRANSACTIONS (a write or markers under
// way), PRODUCER_FENCED (the handler answers INVALID_PRODUCER_EPOCH before
// v4, as Kafka), NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE (also when no
// producer id can be had), UNKNOWN_SERVER_ERROR.
func (c *Coordinator) InitProducerID(txnID string, timeout time.Duration, producerID int64, producerEpoch int16,
	respond func(id int64, epoch int16, err *kerr.Error)) {
	fail := func(err *kerr.Error) { respond(noProducerID, noEpoch, err) }
	switch {
	case txnID == "":
		fail(kerr.InvalidRequest)
		return
	case timeout <= 0 || timeout > c.cfg.MaxTimeout:
		fail(kerr.InvalidTransactionTimeout)
		return
	case (producerID == noProducerID) != (producerEpoch == noEpoch):
		fail(kerr.InvalidRequest)
		return
	}
	timeoutMs := int32(timeout / time.Millisecond)
	expected := producerID != noProducerID
	// fresh is a producer id fetched for this request, with no lock held:
	// for an id created, or one whose epochs are exhausted. Unused, it is
	// lost, as Kafka loses one that races.
	fresh := int64(noProducerID)
	for {
		t, err := c.lockTxn(txnID)
		if t == nil && err == nil {
			if fresh == noProducerID {
				if fresh, err = c.producerID(txnID); err != nil {
					fail(err)
					return
				}
			}
			t, err = c.create(txnID, fresh, timeoutMs)
			if t == nil && err == nil {
				continue // created meanwhile
			}
			fresh = noProducerID
		}
		if t == nil {
			fail(err)
			return
		}
		var a after
		next, err, needID := c.initLocked(t, timeoutMs, producerID, producerEpoch, expected, fresh, respond, &a)
		t.mu.Unlock()
		a.run()
		if needID {
			if fresh, err = c.producerID(txnID); err != nil {
				fail(err)
				return
			}
			continue
		}
		if err != nil {
			fail(err)
		} else if next != nil {
			c.zl.Debug("initializing a transactional producer", zap.String("transactional_id", txnID),
				zap.Int64("producer_id", next.pid), zap.Int16("epoch", next.epoch))
		}
		return
	}
}

// producerID fetches a new producer id.
func (c *Coordinator) producerID(txnID string) (int64, *kerr.Error) {
	id, err := c.cfg.NextProducerID()
	if err != nil {
		c.zl.Warn("no producer id for a transactional producer", zap.String("transactional_id", txnID), zap.Error(err))
		return noProducerID, errNotAvailable
	}
	return id, nil
}

// initLocked is InitProducerID on t (Kafka's prepareInitProducerIdTransit
// and what follows it). It returns the transition it wrote, if any, or
// the error to answer at once; needID when a new producer id is needed
// and fresh has none (the caller fetches one with no lock held and tries
// again). A write started answers respond itself.
//
// REQUIRES: t.mu held.
func (c *Coordinator) initLocked(t *txn, timeoutMs int32, pid int64, epoch int16, expected bool, fresh int64,
	respond func(int64, int16, *kerr.Error), a *after) (next *metadata, err *kerr.Error, needID bool) {
	m := &t.meta
	switch {
	case t.pending != nil:
		return nil, errConcurrent, false
	case expected && !(m.epoch == noEpoch || pid == m.pid || (pid == m.lastPID && epochExhausted(epoch))):
		// The producer is not the id's current one, nor the one before a
		// producer id rotation it did not hear of.
		return nil, errFenced, false
	}
	switch m.state {
	case PrepareCommit, PrepareAbort:
		return nil, errConcurrent, false
	case Ongoing:
		c.zl.Info("fencing the producer of an ongoing transaction: aborting it", zap.String("transactional_id", t.id),
			zap.Int64("producer_id", m.pid), zap.Int16("epoch", m.epoch))
		fenced := func(err *kerr.Error) {
			if err == nil {
				// The abort is written: the producer retries, and its
				// retry bumps the epoch again (or rotates the id).
				err = errConcurrent
			}
			respond(noProducerID, noEpoch, err)
		}
		c.fenceLocked(t, fenced, a)
		return nil, nil, false
	case Empty, CompleteCommit, CompleteAbort:
	default:
		c.zl.Error("a transactional id in a state it cannot rest in", zap.String("transactional_id", t.id),
			zap.Stringer("state", m.state))
		return nil, kerr.UnknownServerError, false
	}
	now := c.nowMs()
	n := m.transition(Empty, now)
	n.timeoutMs, n.parts, n.start = timeoutMs, nil, noTimestamp
	switch {
	case epochExhausted(m.epoch) && (!expected || epoch == m.epoch):
		// Kafka's prepareProducerIdRotation: a new producer id, epoch 0,
		// remembering the exhausted epoch for a retry of this request.
		if fresh == noProducerID {
			return nil, nil, true
		}
		n.pid, n.epoch, n.lastEpoch = fresh, 0, noEpoch
		if expected {
			n.lastEpoch = m.epoch
		}
	case !expected:
		n.epoch, n.lastEpoch = m.epoch+1, noEpoch
	case m.epoch == noEpoch || epoch == m.epoch:
		// The producer goes on after an error, and nobody else took
		// the id meanwhile: bump, remembering the epoch it had.
		n.epoch, n.lastEpoch = m.epoch+1, m.epoch
	case epoch == m.lastEpoch:
		// A retry of a bump already made, whose answer was lost: the
		// same answer.
		n.epoch, n.lastEpoch = m.epoch, m.lastEpoch
	default:
		c.zl.Info("a producer's epoch is neither the current nor the last", zap.String("transactional_id", t.id),
			zap.Int16("epoch", epoch), zap.Int16("current", m.epoch), zap.Int16("last", m.lastEpoch))
		return nil, errFenced, false
	}
	t.answer = func(err *kerr.Error) {
		if err != nil {
			respond(noProducerID, noEpoch, err)
			return
		}
		respond(n.pid, n.epoch, nil)
	}
	t.writeLocked(n, a, func(err *kerr.Error, a *after) {
		if err != nil {
			t.dropLocked(a)
		}
		t.answerLocked(err, a)
	})
	return &n, nil, false
}
