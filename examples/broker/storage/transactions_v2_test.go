package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// TestMarkerAtBumpedEpoch: with transaction version 2 the coordinator
// ends every transaction at the producer's epoch+1. The partition takes
// the marker, moves the producer to that epoch, and takes the next
// transaction's first batch at it, from sequence 0 only (Kafka's last
// sequence of -1 after an epoch bump); the old epoch is stale from then.
func TestMarkerAtBumpedEpoch(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	_, err := p.Append(batchtest.Transactional(7, 3, 0, 1, "a", "b"))
	require.NoError(t, err)
	mark(t, p, 7, 4, true) // the end of the transaction at 3, at 4
	_, _, open := p.OngoingTxn(7)
	assert.False(t, open, "the transaction is complete")
	states := p.Producers()
	require.Len(t, states, 1)
	assert.Equal(t, int16(4), states[0].ProducerEpoch)
	assert.Equal(t, int32(-1), states[0].LastSequence, "the old epoch's sequences are forgotten")

	_, err = p.Append(batchtest.Transactional(7, 3, 2, 1, "c"))
	assert.ErrorIs(t, err, ErrInvalidProducerEpoch, "a late batch of the ended transaction")
	_, err = p.Append(batchtest.Transactional(7, 4, 2, 1, "c"))
	assert.ErrorIs(t, err, ErrOutOfOrderSequence, "the bumped epoch starts at sequence 0")
	res, err := p.Append(batchtest.Transactional(7, 4, 0, 1, "c"))
	require.NoError(t, err)
	first, epoch, open := p.OngoingTxn(7)
	assert.True(t, open, "the next transaction is open")
	assert.Equal(t, res.BaseOffset, first)
	assert.Equal(t, int16(4), epoch)
	_, err = p.Append(batchtest.Transactional(7, 4, 1, 1, "d"))
	require.NoError(t, err, "then the sequence goes on")
	mark(t, p, 7, 5, false)
	_, aborted := readCommitted(t, p, 0)
	require.Len(t, aborted, 1, "the second transaction aborted, the first not")
	assert.Equal(t, res.BaseOffset, aborted[0].FirstOffset)
}

// TestMarkerAtSameEpochKeepsSequences: a version 1 marker, at the
// producer's epoch, keeps its sequences: its next transaction goes on
// from them.
func TestMarkerAtSameEpochKeepsSequences(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	_, err := p.Append(batchtest.Transactional(7, 3, 0, 1, "a", "b"))
	require.NoError(t, err)
	mark(t, p, 7, 3, true)
	_, err = p.Append(batchtest.Transactional(7, 3, 0, 1, "c"))
	assert.ErrorIs(t, err, ErrOutOfOrderSequence)
	_, err = p.Append(batchtest.Transactional(7, 3, 2, 1, "c"))
	require.NoError(t, err)
}

// TestAddGuard: the guard of KIP-890 part 2's add survives the marker of
// the producer's previous transaction, at the epoch of the transaction
// added to (the coordinator completed it before adding), and is voided by
// one at a later epoch (the transaction added to was aborted meanwhile).
func TestAddGuard(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	_, err := p.Append(batchtest.Transactional(7, 3, 0, 1, "a"))
	require.NoError(t, err)

	g := p.AddGuard(7, 4)
	mark(t, p, 7, 4, true) // the previous transaction's end, bumped to 4
	_, err = p.AppendVerified(batchtest.Transactional(7, 4, 0, 1, "b"), g)
	require.NoError(t, err, "the marker ended the transaction before the one added to")

	mark(t, p, 7, 5, true)
	g = p.AddGuard(7, 5)
	mark(t, p, 7, 7, false) // a timeout's abort of the transaction at 5 (fenced, then bumped)
	_, err = p.AppendVerified(batchtest.Transactional(7, 5, 0, 1, "c"), g)
	assert.Error(t, err, "the transaction added to was aborted after the add")
	_, _, open := p.OngoingTxn(7)
	assert.False(t, open)

	v := p.VerificationGuard(7)
	mark(t, p, 7, 7, false)
	_, err = p.AppendVerified(batchtest.Transactional(7, 7, 0, 1, "d"), v)
	assert.ErrorIs(t, err, ErrInvalidTxnState, "a verification's guard is voided by any marker")
}
