package kafkanet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// growAsync grows c by n on a goroutine and returns a channel that gets
// grow's error.
func growAsync(b *memBudget, c *memCharge, n int64, done <-chan struct{}) chan error {
	ch := make(chan error, 1)
	go func() { ch <- b.grow(c, n, done, nil) }()
	return ch
}

func awaitWaiters(t *testing.T, b *memBudget, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return b.waiting() == n }, 5*time.Second, time.Millisecond, "%d waiting", n)
}

func TestMemBudgetWithinLimit(t *testing.T) {
	b := newMemBudget(100)
	a, c := &memCharge{}, &memCharge{}
	require.NoError(t, b.grow(a, 60, nil, nil))
	require.NoError(t, b.grow(c, 40, nil, nil))
	assert.Equal(t, int64(100), b.inUse())
	b.releaseAll(a)
	b.releaseAll(c)
	assert.Equal(t, int64(0), b.inUse())
	assert.Zero(t, a.n+c.n)
}

// TestMemBudgetWaitsThenOverdraws: past the limit the first waiter takes
// the overdraft (so that requests holding part of the budget never wedge
// every reader), the next waits until bytes are given back, in order.
func TestMemBudgetWaitsThenOverdraws(t *testing.T) {
	b := newMemBudget(100)
	holder, first, second := &memCharge{}, &memCharge{}, &memCharge{}
	require.NoError(t, b.grow(holder, 90, nil, nil))
	require.NoError(t, b.grow(first, 50, nil, nil), "the first past the limit overdraws")
	assert.True(t, first.overdrawn)
	assert.Equal(t, int64(140), b.inUse())

	got := growAsync(b, second, 10, nil)
	awaitWaiters(t, b, 1)
	require.NoError(t, b.grow(first, 1000, nil, nil), "the overdraft's holder goes on growing")

	b.releaseAll(holder) // 1050 still used: second still waits
	assert.Equal(t, 1, b.waiting())
	b.releaseAll(first) // overdraft given back: 0 used
	require.NoError(t, <-got)
	assert.Equal(t, int64(10), b.inUse())
	assert.False(t, second.overdrawn, "granted within the limit")
}

// TestMemBudgetWaitersInOrder: a grow that would fit does not pass one
// that waits; the first waiter takes the overdraft when it is free.
func TestMemBudgetWaitersInOrder(t *testing.T) {
	b := newMemBudget(100)
	holder, over, big, small := &memCharge{}, &memCharge{}, &memCharge{}, &memCharge{}
	require.NoError(t, b.grow(holder, 100, nil, nil))
	require.NoError(t, b.grow(over, 10, nil, nil)) // the overdraft
	bigDone := growAsync(b, big, 80, nil)
	awaitWaiters(t, b, 1)
	smallDone := growAsync(b, small, 1, nil)
	awaitWaiters(t, b, 2)

	b.release(holder, 60) // 50 used: small would fit, but big waits before it
	assert.Equal(t, 2, b.waiting())
	b.releaseAll(over) // the overdraft is free: big, first, takes it
	require.NoError(t, <-bigDone)
	assert.True(t, big.overdrawn)
	assert.Equal(t, 1, b.waiting(), "small waits: 121 bytes would be past the limit")
	b.releaseAll(holder) // 80 used
	require.NoError(t, <-smallDone)
	assert.Equal(t, int64(81), b.inUse())
}

func TestMemBudgetWaitCancelled(t *testing.T) {
	b := newMemBudget(10)
	holder, over, c := &memCharge{}, &memCharge{}, &memCharge{}
	require.NoError(t, b.grow(holder, 10, nil, nil))
	require.NoError(t, b.grow(over, 10, nil, nil))
	done := make(chan struct{})
	got := growAsync(b, c, 5, done)
	awaitWaiters(t, b, 1)
	close(done)
	assert.ErrorIs(t, <-got, errBudgetClosed)
	assert.Equal(t, 0, b.waiting())
	assert.Equal(t, int64(0), c.n, "nothing granted")
}

// TestMemBudgetTake: a fetch takes what is left, never waits, and may be
// forced past the limit by the one batch it returns whatever its size.
func TestMemBudgetTake(t *testing.T) {
	b := newMemBudget(100)
	holder, fetch := &memCharge{}, &memCharge{}
	require.NoError(t, b.grow(holder, 70, nil, nil))
	assert.Equal(t, int64(30), b.take(fetch, 50))
	assert.Equal(t, int64(0), b.take(fetch, 50), "nothing left")
	b.force(fetch, 20)
	assert.Equal(t, int64(120), b.inUse())
	b.release(fetch, 10)
	assert.Equal(t, int64(40), fetch.n)
	b.releaseAll(fetch)
	b.releaseAll(holder)
	assert.Equal(t, int64(0), b.inUse())
}

func TestMemBudgetUnbounded(t *testing.T) {
	b := newMemBudget(-1)
	c := &memCharge{}
	require.NoError(t, b.grow(c, 1<<40, nil, nil))
	assert.Equal(t, int64(1<<40), b.take(c, 1<<40))
	assert.False(t, c.overdrawn)
}
