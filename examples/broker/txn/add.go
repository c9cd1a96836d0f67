package txn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// AddPartitions adds partitions to the producer's transaction (Kafka's
// handleAddPartitionsToTransaction), starting it if none is under way,
// and calls respond once, from any goroutine, once the transaction with
// them is written: the producer may then write to them. A transaction
// that starts has its timeout armed, from now. Partitions all in the
// Ongoing transaction already are answered at once, with nothing written.
//
// Errors: INVALID_REQUEST (an empty id), INVALID_PRODUCER_ID_MAPPING (no
// such id, another producer id), PRODUCER_FENCED (another epoch; the
// handler answers INVALID_PRODUCER_EPOCH before v2, as Kafka),
// CONCURRENT_TRANSACTIONS (a write, a fence or markers under way, the
// last transaction still completing), NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, UNKNOWN_SERVER_ERROR (a transaction too large
// to write).
func (c *Coordinator) AddPartitions(txnID string, producerID int64, epoch int16, parts []TopicPartition,
	respond func(err *kerr.Error)) {
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
	c.addLocked(t, producerID, epoch, parts, false, respond, &a)
	t.mu.Unlock()
	a.run()
}

// AddPartitionsV2 is AddPartitions for a producer running transaction
// version 2 (KIP-890 part 2; Kafka's addPartition operation): a
// partition leader adding the partition of a Produce v12+ batch, or the
// group's __consumer_offsets partition of a TxnOffsetCommit v5, before it
// appends; the producer sends no AddPartitionsToTxn. The transaction is
// marked as the producer's transaction version 2, so that its fences bump
// its epoch as EndTxnV2 would (end.go). Its errors are AddPartitions'.
func (c *Coordinator) AddPartitionsV2(txnID string, producerID int64, epoch int16, parts []TopicPartition,
	respond func(err *kerr.Error)) {
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
	c.addLocked(t, producerID, epoch, parts, true, respond, &a)
	t.mu.Unlock()
	a.run()
}

// OffsetsPartition returns the __consumer_offsets partition that holds
// group's offsets, which AddOffsets adds (Config.OffsetsPartition).
func (c *Coordinator) OffsetsPartition(group string) TopicPartition {
	return TopicPartition{Topic: offsetsTopic, Partition: c.cfg.OffsetsPartition(group)}
}

// AddOffsets adds group's __consumer_offsets partition
// (Config.OffsetsPartition) to the producer's transaction, for its
// TxnOffsetCommit (Kafka's handleAddOffsetsToTxn): AddPartitions of that
// partition, with its errors.
func (c *Coordinator) AddOffsets(txnID string, producerID int64, epoch int16, group string, respond func(err *kerr.Error)) {
	c.AddPartitions(txnID, producerID, epoch, []TopicPartition{c.OffsetsPartition(group)}, respond)
}

// offsetsTopic is the group coordinator's state topic.
const offsetsTopic = "__consumer_offsets"

// addLocked is AddPartitions on t; tv2 for AddPartitionsV2.
//
// REQUIRES: t.mu held.
func (c *Coordinator) addLocked(t *txn, pid int64, epoch int16, parts []TopicPartition, tv2 bool,
	respond func(*kerr.Error), a *after) {
	m := &t.meta
	reply := func(err *kerr.Error) { a.do(func() { respond(err) }) }
	// For a producer of transaction version 2, a transition under way
	// is checked first, as Kafka 4 does: it adds its next transaction's
	// partitions as soon as its EndTxn is answered, at the epoch (or the
	// producer id) the end completes to, which the id takes only once
	// its markers are written. A version 1 producer is told first that it
	// is fenced, as before.
	switch {
	case !tv2 && m.pid != pid:
		reply(errMapping)
		return
	case !tv2 && m.epoch != epoch:
		reply(errFenced)
		return
	case (t.send != nil || (tv2 && t.pending != nil)) && c.cfg.CompletionWait > 0:
		// The previous transaction's markers or completion are being
		// written: wait for them rather than have the producer back off
		// and retry (completion.go). A version 2 producer's partitions
		// are added by their leaders, each on its own: an add finds
		// another's write under way whenever the producer writes to
		// partitions of two brokers, and waits for it too.
		retry := c.AddPartitions
		if tv2 {
			retry = c.AddPartitionsV2
		}
		c.awaitCompletionLocked(t, func() { retry(t.id, pid, epoch, parts, respond) }, respond, a)
		return
	case t.pending != nil, m.state == PrepareCommit, m.state == PrepareAbort:
		reply(errConcurrent)
		return
	case m.pid != pid:
		reply(errMapping)
		return
	case m.epoch != epoch:
		reply(errFenced)
		return
	}
	switch m.state {
	case Ongoing:
		if n := m.parts.with(parts); len(n) == len(m.parts) {
			reply(nil) // all in it already: nothing to write
			return
		}
	case Empty, CompleteCommit, CompleteAbort:
	default:
		c.zl.Error("a transactional id in a state it cannot rest in", zap.String("transactional_id", t.id),
			zap.Stringer("state", m.state))
		reply(kerr.UnknownServerError)
		return
	}
	// Kafka's prepareAddPartitions.
	now := c.nowMs()
	n := m.transition(Ongoing, now)
	if m.state != Ongoing {
		n.start, n.parts = now, nil // a new transaction
	}
	n.parts = n.parts.with(parts)
	if tv2 || m.state != Ongoing {
		// A transaction is the version of the producer that began it
		// (a version 1 producer never sends AddPartitionsV2's requests).
		n.tv2 = tv2
	}
	t.answer = respond
	t.writeLocked(n, a, func(err *kerr.Error, a *after) {
		if err != nil {
			t.dropLocked(a)
		}
		t.answerLocked(err, a)
	})
}

// VerifyPartitions answers KIP-890 part 1's check from a partition leader
// (AddPartitionsToTxn v4+ with verify_only; Kafka's
// handleVerifyPartitionsInTransaction): for each partition, nil if it is
// in the Ongoing transaction of producerID at epoch, as written, else why
// not. Synchronous: nothing is written, and a pending write is not waited
// for (what is written decides).
//
// Errors, for every partition: INVALID_PRODUCER_ID_MAPPING (no such id,
// another producer id), PRODUCER_FENCED (another epoch),
// CONCURRENT_TRANSACTIONS (the transaction is completing),
// NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE; for a partition not in the
// transaction (never added, or its transaction ended: a timeout's abort),
// TRANSACTION_ABORTABLE, as Kafka answers from 3.8 (3.6 and 3.7 answered
// INVALID_TXN_STATE). The leader that asked maps it back to
// INVALID_TXN_STATE for a client that predates it (Produce v10 and
// below, Kafka's AddPartitionsToTxnManager).
func (c *Coordinator) VerifyPartitions(txnID string, producerID int64, epoch int16, parts []TopicPartition) map[TopicPartition]*kerr.Error {
	out := make(map[TopicPartition]*kerr.Error, len(parts))
	all := func(err *kerr.Error) map[TopicPartition]*kerr.Error {
		for _, tp := range parts {
			out[tp] = err
		}
		return out
	}
	if txnID == "" {
		return all(kerr.InvalidRequest)
	}
	t, err := c.lockTxn(txnID)
	if t == nil {
		if err == nil {
			err = errMapping
		}
		return all(err)
	}
	defer t.mu.Unlock()
	m := &t.meta
	switch {
	case m.pid != producerID:
		return all(errMapping)
	case m.epoch != epoch:
		return all(errFenced)
	case m.state == PrepareCommit, m.state == PrepareAbort:
		return all(errConcurrent)
	}
	for _, tp := range parts {
		out[tp] = nil
		if _, ok := m.parts[tp]; !ok || m.state != Ongoing {
			out[tp] = errAbortable
		}
	}
	return out
}
