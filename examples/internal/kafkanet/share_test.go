package kafkanet

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acquireAsync acquires n of host's share on a goroutine and returns a
// channel that gets acquire's error.
func acquireAsync(s *hostShares, host string, n int64, done <-chan struct{}) chan error {
	ch := make(chan error, 1)
	go func() { ch <- s.acquire(host, n, done, nil) }()
	return ch
}

func awaitShareWaiters(t *testing.T, s *hostShares, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return s.readersWaiting() == n }, 5*time.Second, time.Millisecond, "%d waiting", n)
}

// TestHostSharesWaitPerHost: a host past its share waits, and no other
// host waits behind it; bytes given back let it in.
func TestHostSharesWaitPerHost(t *testing.T) {
	s := newHostShares(100)
	stops := 0
	require.NoError(t, s.acquire("a", 60, nil, func() { stops++ }))
	require.NoError(t, s.acquire("a", 40, nil, func() { stops++ }))
	assert.Zero(t, stops, "within the share: no wait")

	got := acquireAsync(s, "a", 50, nil)
	awaitShareWaiters(t, s, 1)
	require.NoError(t, s.acquire("b", 100, nil, nil), "another host has its own share")

	s.release("a", 40) // 60 held: 50 more would pass the share
	assert.Equal(t, 1, s.readersWaiting())
	s.release("a", 60)
	require.NoError(t, <-got)
	assert.Zero(t, s.readersWaiting())

	s.release("a", 50)
	s.release("b", 100)
	assert.Empty(t, s.hosts, "hosts holding nothing are forgotten")
}

// TestHostSharesFirstFit: a small request passes a large one of its host
// that does not fit yet; both get in, in order, when bytes come back.
func TestHostSharesFirstFit(t *testing.T) {
	s := newHostShares(100)
	require.NoError(t, s.acquire("a", 90, nil, nil))
	large := acquireAsync(s, "a", 80, nil)
	awaitShareWaiters(t, s, 1)
	require.NoError(t, s.acquire("a", 10, nil, nil), "fits: does not wait behind the large one")
	small := acquireAsync(s, "a", 15, nil)
	awaitShareWaiters(t, s, 2)

	s.release("a", 90) // 10 held: the large one, first, fits; the small one then does not
	require.NoError(t, <-large)
	assert.Equal(t, 1, s.readersWaiting())
	s.release("a", 10)
	require.NoError(t, <-small)
	assert.Equal(t, int64(95), s.hosts["a"].held)
}

func TestHostSharesWaitCancelled(t *testing.T) {
	s := newHostShares(100)
	require.NoError(t, s.acquire("a", 100, nil, nil))
	done := make(chan struct{})
	got := acquireAsync(s, "a", 1, done)
	awaitShareWaiters(t, s, 1)
	close(done)
	assert.ErrorIs(t, <-got, errBudgetClosed)
	assert.Zero(t, s.readersWaiting())
	s.release("a", 100)
	assert.Empty(t, s.hosts, "nothing held, nobody waiting: forgotten")
}

func TestHostSharesUnbounded(t *testing.T) {
	s := newHostShares(math.MaxInt64)
	require.NoError(t, s.acquire("a", math.MaxInt64, nil, nil))
	require.NoError(t, s.acquire("a", math.MaxInt64, nil, nil))
	s.release("a", math.MaxInt64)
	assert.Empty(t, s.hosts, "nothing counted")
}
