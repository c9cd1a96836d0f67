package test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroupResumesFromCommittedOffsets has two consumers process half of
// a 12-partition topic, cut off in the middle of a poll and so of some
// partitions, and close: each commits what it processed and leaves, and
// the group is Empty, holding only its offsets. Two new consumers of the
// same group then read the rest: each partition from the offset after the
// last record processed, none read again, none skipped.
func TestGroupResumesFromCommittedOffsets(t *testing.T) {
	const partitions, records, half = 12, 2400, 1111
	srv := startGroupBroker(t)
	admin := newClient(t, srv)
	createTopic(t, admin, "resume", partitions)

	// The first two process 1,111 records between them: the limit cuts a
	// poll short, and what it did not admit is neither processed nor
	// marked.
	first := newLedger(half)
	a := startGroupConsumer(t, srv, "a", "resume", "resume", first)
	b := startGroupConsumer(t, srv, "b", "resume", "resume", first)
	waitBalanced(t, admin, "resume", partitions, a, b)
	want := newSpreadProducer(t, srv, "resume", partitions).produce(records)
	eventually(t, func() bool { return first.processed() == half }, "the first consumers process their share")
	start := time.Now()
	a.Close()
	b.Close()
	t.Logf("the first consumers processed %v and closed in %v", first.counts(), time.Since(start).Round(time.Millisecond))
	a.checkCommits()
	b.checkCommits()

	d := describeGroup(t, admin, "resume")
	assert.Equal(t, "Empty", d.State, "every member left")
	assert.Empty(t, d.Members)
	// What waits for an Empty group is its offsets' expiry, nothing else.
	eventually(t, func() bool {
		sz := srv.PurgatorySizes()
		return sz["Heartbeat"].Pending == 0 && sz["Rebalance"].Pending == 0 && sz["OffsetExpiration"].Pending == 1
	}, "no session nor join left waiting; the offsets' expiry armed")
	committed := committedOffsets(t, admin, "resume", "resume", partitions)
	_, firstNext := first.offsets()
	cut := 0 // partitions processed part way
	for p := range int32(partitions) {
		next, ok := firstNext[p]
		if !ok {
			next = -1 // nothing processed, nothing committed
		}
		assert.Equal(t, next, committed[p], "partition %d: committed the offset after the last record processed", p)
		if next > 0 && next < records/partitions {
			cut++
		}
	}
	t.Logf("committed offsets %v; %d partitions cut part way", committed, cut)
	assert.Positive(t, cut, "the test stops the group part way through some partition")

	second := newLedger(0)
	c := startGroupConsumer(t, srv, "c", "resume", "resume", second)
	e := startGroupConsumer(t, srv, "e", "resume", "resume", second)
	eventually(t, func() bool { return second.distinct() >= records-half }, "the new consumers read the rest")
	t.Logf("the new consumers processed %v", second.counts())
	secondFirst, _ := second.offsets()
	for p := range int32(partitions) {
		if committed[p] < records/partitions {
			assert.Equal(t, max(committed[p], 0), secondFirst[p], "partition %d: resumed at the committed offset", p)
		}
	}
	assert.Equal(t, records-half, second.processed(), "no record read twice")
	for _, v := range want {
		n := first.count(v) + second.count(v)
		require.Equal(t, 1, n, "record %s: processed once across the restart", v)
	}
	c.checkCommits()
	e.checkCommits()
}
