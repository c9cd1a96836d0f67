package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// TestVerificationGuard: KIP-890's guard (Kafka's VerificationStateEntry).
// A batch that would open its producer's transaction, verified with its
// coordinator under a guard, is appended only if no marker of the
// producer landed since the guard was taken (the coordinator's timeout
// abort, between the check and the append): else it would open a
// transaction the coordinator has already ended. Once the transaction is
// open, its next batches need no guard.
func TestVerificationGuard(t *testing.T) {
	p, _ := newTestPartition(t, forever)
	guard := p.VerificationGuard(7)
	require.NotZero(t, guard)
	res, err := p.AppendVerified(batchtest.Transactional(7, 0, 0, 1, "a"), guard)
	require.NoError(t, err, "verified, nothing in between")
	assert.Equal(t, int64(0), res.BaseOffset)
	_, err = p.AppendVerified(batchtest.Transactional(7, 0, 1, 1, "b"), 0)
	require.NoError(t, err, "the transaction is open: no guard needed")
	mark(t, p, 7, 0, true)

	stale := p.VerificationGuard(7)
	mark(t, p, 7, 0, false) // the coordinator aborted meanwhile
	_, err = p.AppendVerified(batchtest.Transactional(7, 0, 2, 1, "c"), stale)
	assert.ErrorIs(t, err, ErrInvalidTxnState, "a marker landed after the check")
	_, _, open := p.OngoingTxn(7)
	assert.False(t, open, "no transaction opened")

	old := p.VerificationGuard(7)
	newer := p.VerificationGuard(7)
	_, err = p.AppendVerified(batchtest.Transactional(7, 0, 2, 1, "c"), old)
	assert.ErrorIs(t, err, ErrInvalidTxnState, "a later check replaced it")
	_, err = p.AppendVerified(batchtest.Transactional(7, 0, 2, 1, "c"), newer)
	require.NoError(t, err)
}
