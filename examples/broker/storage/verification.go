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
//
// KIP-890 part 2 adds the partition to the transaction instead
// (AddGuard): the coordinator waits for the producer's previous
// transaction to complete before it adds, so that transaction's marker,
// at the epoch the producer writes at now (transaction version 2 bumps
// the epoch at every end), may land after the guard is taken; it ended
// the transaction before, not the one added to. Only a marker at a later
// epoch, which ended the transaction added to, voids an add's guard.

// VerificationGuard returns a guard for a check of producerID's
// transaction in this partition, to be given to AppendVerified; it voids
// the producer's earlier guard. O(1).
func (p *Partition) VerificationGuard(producerID int64) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.producers.takeGuard(producerID, guard{})
}

// AddGuard returns a guard for an add of this partition to the
// transaction of producerID at epoch (KIP-890 part 2), to be given to
// AppendVerified: it voids the producer's earlier guard, and is voided by
// a later guard or a marker of the producer at a later epoch. O(1).
func (p *Partition) AddGuard(producerID int64, epoch int16) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.producers.takeGuard(producerID, guard{add: true, epoch: epoch})
}

// guard is a verification guard taken (its seq numbers it), and, for an
// add's, the epoch of the transaction added to.
type guard struct {
	seq   uint64
	add   bool
	epoch int16
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

// takeGuard returns a new guard for producer id, g with its number.
//
// REQUIRES: the partition's mu held for writing.
func (ps *producers) takeGuard(id int64, g guard) uint64 {
	if ps.guards == nil {
		ps.guards = make(map[int64]guard)
	}
	ps.guardSeq++
	g.seq = ps.guardSeq
	ps.guards[id] = g
	return g.seq
}

// voidGuard voids the guard of the producer of m, a marker appended, if
// m ends what the guard's check was for: any transaction of the
// producer's for a verification, the one added to (m at a later epoch)
// for an add.
//
// REQUIRES: the partition's mu held for writing.
func (ps *producers) voidGuard(m BatchInfo) {
	if g, ok := ps.guards[m.ProducerID]; ok && (!g.add || m.ProducerEpoch > g.epoch) {
		delete(ps.guards, m.ProducerID)
	}
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
	if g, ok := ps.guards[b.ProducerID]; !ok || g.seq != guard {
		return fmt.Errorf("%w: producer %d's transaction ended, or was checked again, after its check here",
			ErrInvalidTxnState, b.ProducerID)
	}
	delete(ps.guards, b.ProducerID)
	return nil
}
