package storage

import "fmt"

// KIP-890 part 1's verification guard (Kafka's VerificationStateEntry):
// before a batch that would open its producer's transaction is appended,
// the broker asks the transaction's coordinator whether the partition is
// in the transaction. The answer holds for the transaction the
// coordinator looked at: if a marker of the producer lands here between
// the question and the append (the coordinator aborting the transaction
// on its timeout), the batch would open a transaction that is already
// over, which no marker would ever end. So the broker takes a guard
// before it asks (VerificationGuard), and appends with it
// (AppendVerified): a marker of the producer, or a later guard, voids it.

// VerificationGuard returns a guard for a check of producerID's
// transaction in this partition, to be given to AppendVerified; it voids
// the producer's earlier guard. O(1).
func (p *Partition) VerificationGuard(producerID int64) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.producers.takeGuard(producerID)
}

// AppendVerified is Append for a client's batch whose partition the
// transaction's coordinator confirmed under guard (VerificationGuard): a
// transactional batch that would open its producer's transaction is
// refused ErrInvalidTxnState if a marker of the producer was appended
// since the guard was taken, or a later guard taken. A guard of 0 asks
// for nothing: Append. Its other errors, and what becomes of raw, are
// Append's.
func (p *Partition) AppendVerified(raw []byte, guard uint64) (AppendResult, error) {
	return p.appendFrom(raw, fromClient, guard)
}

// takeGuard returns a new guard for producer id.
//
// REQUIRES: the partition's mu held for writing.
func (ps *producers) takeGuard(id int64) uint64 {
	if ps.guards == nil {
		ps.guards = make(map[int64]uint64)
	}
	ps.guardSeq++
	ps.guards[id] = ps.guardSeq
	return ps.guardSeq
}

// checkGuard refuses b, a client's batch, if it would open its
// producer's transaction and guard is no longer the producer's; a batch
// it lets open the transaction spends the guard.
//
// REQUIRES: the partition's mu held for writing.
func (ps *producers) checkGuard(b BatchInfo, guard uint64) error {
	if !b.Transactional {
		return nil
	}
	if _, epoch, open := ps.ongoing(b.ProducerID); open && epoch == b.ProducerEpoch {
		return nil // its transaction is open here: the check was for it
	}
	if ps.guards[b.ProducerID] != guard {
		return fmt.Errorf("%w: producer %d's transaction ended, or was checked again, after its check here",
			ErrInvalidTxnState, b.ProducerID)
	}
	delete(ps.guards, b.ProducerID)
	return nil
}
