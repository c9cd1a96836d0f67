package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
)

// TestAddPartitions: the first AddPartitions starts a transaction (its
// start time set), answered once written; more partitions extend it,
// those already in it are answered at once with nothing written.
func TestAddPartitions(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.initNow(t, "tx")
	e.clk.Advance(time.Second)
	e.log.setHold(true)
	a := e.add("tx", pid, epoch, tp("t", 0))
	assert.Zero(t, a.n(), "answered once written")
	e.log.release(nil)
	e.log.setHold(false)
	require.Nil(t, a.one(t))
	d := e.describe(t, "tx")
	assert.Equal(t, Ongoing, d.State)
	assert.WithinDuration(t, wallStart.Add(time.Second), d.Started, 0)
	assert.Equal(t, testTimeout, d.Timeout)

	e.clk.Advance(time.Second)
	writes := e.log.appends(0)
	require.Nil(t, e.add("tx", pid, epoch, tp("t", 0)).one(t))
	assert.Equal(t, writes, e.log.appends(0), "all in it already: nothing written")
	require.Nil(t, e.add("tx", pid, epoch, tp("t", 0), tp("u", 3)).one(t))
	assert.Equal(t, writes+1, e.log.appends(0))
	d = e.describe(t, "tx")
	assert.Equal(t, []TopicPartition{tp("t", 0), tp("u", 3)}, d.Partitions)
	assert.WithinDuration(t, wallStart.Add(time.Second), d.Started, 0, "the start stays")
	assert.Equal(t, []string{"Empty", "Ongoing", "Ongoing"}, e.log.states(t, "tx"))
}

// TestAddPartitionsStartsAnew: after a transaction completes, the next
// AddPartitions starts another, with a start time of its own.
func TestAddPartitionsStartsAnew(t *testing.T) {
	for _, commit := range []bool{true, false} {
		e := newEnv(t, 0)
		pid, epoch := e.ongoing(t, "tx", tp("t", 0))
		require.Nil(t, e.end("tx", pid, epoch, commit).one(t))
		e.clk.Advance(time.Minute)
		require.Nil(t, e.add("tx", pid, epoch, tp("u", 1)).one(t))
		d := e.describe(t, "tx")
		assert.Equal(t, Ongoing, d.State)
		assert.Equal(t, []TopicPartition{tp("u", 1)}, d.Partitions, "commit=%v: only the new transaction's", commit)
		assert.WithinDuration(t, wallStart.Add(time.Minute), d.Started, 0)
	}
}

// TestAddPartitionsRefused: the errors of AddPartitions, as Kafka's.
func TestAddPartitionsRefused(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0))
	assert.Equal(t, kerr.InvalidProducerIDMapping, e.add("nope", pid, epoch, tp("t", 0)).one(t), "unknown id")
	assert.Equal(t, kerr.InvalidProducerIDMapping, e.add("tx", pid+1, epoch, tp("t", 0)).one(t), "another producer id")
	assert.Equal(t, kerr.ProducerFenced, e.add("tx", pid, epoch+1, tp("t", 0)).one(t), "another epoch")
	assert.Equal(t, kerr.InvalidRequest, e.add("", pid, epoch, tp("t", 0)).one(t), "an empty id")

	e.log.setHold(true)
	pending := e.add("tx", pid, epoch, tp("t", 1))
	assert.Equal(t, kerr.ConcurrentTransactions, e.add("tx", pid, epoch, tp("t", 0)).one(t), "a write pending")
	e.log.setHold(false)
	e.log.release(nil)
	require.Nil(t, pending.one(t))

	e.markers.setAuto(nil)
	require.Nil(t, e.end("tx", pid, epoch, true).one(t))
	assert.Equal(t, kerr.ConcurrentTransactions, e.add("tx", pid, epoch, tp("t", 0)).one(t), "completing")
	e.markers.answer(written)

	e.log.setRefuse(kerr.NotCoordinator)
	assert.Equal(t, kerr.NotCoordinator, e.add("tx", pid, epoch, tp("t", 0)).one(t), "a write refused")
	assert.Equal(t, CompleteCommit, e.describe(t, "tx").State, "unchanged")
}

// TestAddOffsets: AddOffsets adds the group's __consumer_offsets
// partition.
func TestAddOffsets(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.initNow(t, "tx")
	a := new(answer[*kerr.Error])
	e.c.AddOffsets("tx", pid, epoch, "my-group", a.respond)
	require.Nil(t, a.one(t))
	assert.Equal(t, []TopicPartition{tp(coordinator.OffsetsTopic, coordinator.PartitionFor("my-group", 50))},
		e.describe(t, "tx").Partitions)
	b := new(answer[*kerr.Error])
	e.c.AddOffsets("tx", pid, epoch+1, "my-group", b.respond)
	assert.Equal(t, kerr.ProducerFenced, b.one(t))
}

// TestVerifyPartitions: KIP-890 part 1's check, as Kafka's
// handleVerifyPartitionsInTransaction answers it: a partition not in the
// Ongoing transaction (never added, or its transaction ended) is
// TRANSACTION_ABORTABLE, as from Kafka 3.8 (KAFKA-16314), which the
// partition leader maps back for clients that predate it.
func TestVerifyPartitions(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.ongoing(t, "tx", tp("t", 0))
	in, out := tp("t", 0), tp("t", 1)
	parts := []TopicPartition{in, out}
	both := func(err *kerr.Error) map[TopicPartition]*kerr.Error {
		return map[TopicPartition]*kerr.Error{in: err, out: err}
	}
	assert.Equal(t, map[TopicPartition]*kerr.Error{in: nil, out: kerr.TransactionAbortable},
		e.c.VerifyPartitions("tx", pid, epoch, parts))
	assert.Equal(t, both(kerr.InvalidProducerIDMapping), e.c.VerifyPartitions("nope", pid, epoch, parts))
	assert.Equal(t, both(kerr.InvalidProducerIDMapping), e.c.VerifyPartitions("tx", pid+1, epoch, parts))
	assert.Equal(t, both(kerr.ProducerFenced), e.c.VerifyPartitions("tx", pid, epoch+1, parts))

	e.log.setHold(true)
	a := e.add("tx", pid, epoch, out)
	assert.Equal(t, map[TopicPartition]*kerr.Error{in: nil, out: kerr.TransactionAbortable},
		e.c.VerifyPartitions("tx", pid, epoch, parts), "what is written decides")
	e.log.setHold(false)
	e.log.release(nil)
	require.Nil(t, a.one(t))
	assert.Equal(t, both(nil), e.c.VerifyPartitions("tx", pid, epoch, parts))

	e.markers.setAuto(nil)
	require.Nil(t, e.end("tx", pid, epoch, true).one(t))
	assert.Equal(t, both(kerr.ConcurrentTransactions), e.c.VerifyPartitions("tx", pid, epoch, parts), "PrepareCommit")
	e.markers.answer(written)
	assert.Equal(t, both(kerr.TransactionAbortable), e.c.VerifyPartitions("tx", pid, epoch, parts), "CompleteCommit")

	e.log.setLoaded(0, false)
	e.c.Unload(0, nil)
	assert.Equal(t, both(kerr.NotCoordinator), e.c.VerifyPartitions("tx", pid, epoch, parts))
}
