package tail

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

func tps(n int32) []Start {
	var out []Start
	for i := range n {
		out = append(out, Start{TP: TP{"t", i}})
	}
	return out
}

// TestOnePollPerLeaderForEveryPartition: partitions tailed from one leader
// share its fetch, which carries every one of them; an append upstream
// reaches the partition's cache, and notify tells of it.
func TestOnePollPerLeaderForEveryPartition(t *testing.T) {
	l := newLeader(t, 3)
	var n notes
	m := newTestManager(t, l, &n)
	tails := m.Start(tps(3))
	for i, tl := range tails {
		require.NotNil(t, tl, "partition %d tailed", i)
	}
	assert.Same(t, tails[1], m.Start(tps(3))[1], "a live tail is returned, not started again")
	assert.Equal(t, 3, m.Len())

	// The first answer tells of each partition's state (log start, last
	// stable offset); after it, only changes are told.
	require.Eventually(t, func() bool { return len(l.fetchRequests()) >= 2 }, 10*time.Second, time.Millisecond)
	quiet := n.changes(TP{"t", 0})
	before := n.changes(TP{"t", 1})
	l.append(1)
	require.Eventually(t, func() bool { return n.changes(TP{"t", 1}) > before }, 10*time.Second, time.Millisecond, "told of the append")
	_, end, _ := tails[1].Cache.Span()
	assert.Equal(t, int64(1), end, "the batch is in the cache")
	assert.Equal(t, int64(1), tails[1].Cache.State().HighWatermark, "with upstream's high watermark")
	assert.Equal(t, quiet, n.changes(TP{"t", 0}), "no news for the others")

	fetches := l.fetchRequests()
	require.NotEmpty(t, fetches)
	for i, f := range fetches {
		require.Len(t, f.Topics, 1)
		assert.Len(t, f.Topics[0].Partitions, 3, "fetch %d carries every partition of its leader", i)
		assert.Equal(t, int32(-1), f.ReplicaID, "a consumer's fetch")
		assert.Equal(t, int32(1), f.MinBytes)
	}
}

// TestTailStopsOnAPartitionError: the leader's error for a partition stops
// its tail, with that error, and notify tells of it; the others go on.
func TestTailStopsOnAPartitionError(t *testing.T) {
	l := newLeader(t, 2)
	var n notes
	m := newTestManager(t, l, &n)
	tails := m.Start(tps(2))
	l.fail(0, kerr.NotLeaderForPartition.Code)
	require.Eventually(t, func() bool { return tails[0].Err() != nil }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, tails[0].Err(), ErrFetch)
	assert.ErrorIs(t, tails[0].Err(), kerr.NotLeaderForPartition)
	// The error is set before notify runs (notify's receiver reads it),
	// so the note may come a moment after Err is seen.
	require.Eventually(t, func() bool { return n.stops(TP{"t", 0}) > 0 }, 10*time.Second, time.Millisecond, "told")
	assert.Nil(t, m.Get(TP{"t", 0}), "no longer tailed")
	assert.NoError(t, tails[1].Err(), "the other goes on")
	before := n.changes(TP{"t", 1})
	l.append(1)
	require.Eventually(t, func() bool { return n.changes(TP{"t", 1}) > before }, 10*time.Second, time.Millisecond)
	assert.Equal(t, 1, n.stops(TP{"t", 0}), "told once")
}

// TestTailsStopWhenTheirLeaderGoes: a failed fetch stops every tail of its
// leader.
func TestTailsStopWhenTheirLeaderGoes(t *testing.T) {
	l := newLeader(t, 2)
	var n notes
	m := newTestManager(t, l, &n)
	tails := m.Start(tps(2))
	require.Eventually(t, func() bool { return len(l.fetchRequests()) > 0 }, 10*time.Second, time.Millisecond)
	l.dropConnections()
	for i, tl := range tails {
		// notify runs after the error is set: wait for the note.
		require.Eventually(t, func() bool { return n.stops(tl.TP) > 0 }, 10*time.Second, time.Millisecond, "tail %d", i)
		assert.ErrorIs(t, tl.Err(), ErrFetch)
		assert.Equal(t, 1, n.stops(tl.TP), "told once")
	}
	assert.Zero(t, m.Len())
	again := m.Start(tps(1))
	require.NotNil(t, again[0], "a new tail gets a new fetcher")
	l.append(0)
	require.Eventually(t, func() bool { _, end, _ := again[0].Cache.Span(); return end == 1 }, 10*time.Second, time.Millisecond)
}

func TestIdleTailStops(t *testing.T) {
	l := newLeader(t, 1)
	var n notes
	m := newTestManager(t, l, &n, WithIdle(100*time.Millisecond))
	tl := m.Start(tps(1))[0]
	require.NotNil(t, tl)
	require.Eventually(t, func() bool { return n.stops(tl.TP) > 0 }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, tl.Err(), ErrIdle)
	assert.Equal(t, 1, n.stops(tl.TP), "told once")
}

// TestTouchKeepsATailGoing: a tail used within tail.idle.ms goes on, and
// the same tail left alone past it stops. The idle time is read from a
// clock the test moves, so the verdict does not depend on how fast rounds
// run: each step waits for a round that started after the move.
func TestTouchKeepsATailGoing(t *testing.T) {
	l := newLeader(t, 1)
	var n notes
	var clk fakeNow
	m := newTestManager(t, l, &n, WithIdle(200*time.Millisecond), withNow(clk.now))
	tl := m.Start(tps(1))[0]
	require.NotNil(t, tl)
	// roundAfter waits until a round has started since it was called:
	// two more fetches, the second sent by a round begun after the call.
	roundAfter := func() {
		t.Helper()
		r := len(l.fetchRequests())
		require.Eventually(t, func() bool { return len(l.fetchRequests()) >= r+2 }, 10*time.Second, time.Millisecond)
	}
	for i := range 10 { // two seconds on the clock, each step well inside the idle time
		tl.Touch()
		clk.advance(150 * time.Millisecond)
		roundAfter()
		require.NoError(t, tl.Err(), "touched at step %d: not idle", i)
	}
	clk.advance(250 * time.Millisecond) // untouched past the idle time
	require.Eventually(t, func() bool { return tl.Err() != nil }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, tl.Err(), ErrIdle)
}

func TestCloseStopsEveryTail(t *testing.T) {
	l := newLeader(t, 2)
	var n notes
	m := newTestManager(t, l, &n)
	tails := m.Start(tps(2))
	m.Close()
	for _, tl := range tails {
		assert.True(t, errors.Is(tl.Err(), ErrClosed))
		assert.Equal(t, 1, n.stops(tl.TP), "told once")
	}
	assert.Nil(t, m.Start(tps(1))[0], "nothing starts after Close")
	m.Close() // idempotent
}
