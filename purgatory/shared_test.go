package purgatory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/timer"
)

// Two purgatories on one timer: each counts its own delayed operations, the
// timer's owner drives and closes it, and closing a purgatory leaves it.
func TestSharedTimer(t *testing.T) {
	clk := timer.NewManualClock(0)
	tm, err := timer.New(timer.WithClock(clk))
	require.NoError(t, err)
	defer tm.Close()
	fetch, err := New[string]("fetch", WithTimer(tm), WithReaper(false))
	require.NoError(t, err)
	produce, err := New[string]("produce", WithTimer(tm), WithReaper(false))
	require.NoError(t, err)

	f1, f2, p1 := newMockOp(), newMockOp(), newMockOp()
	submit(t, fetch, f1, 10*time.Millisecond, "a")
	submit(t, fetch, f2, time.Minute, "a", "b")
	submit(t, produce, p1, time.Minute, "a")
	assert.Equal(t, 2, fetch.Delayed())
	assert.Equal(t, 1, produce.Delayed())
	assert.Equal(t, 3, tm.Size())

	clk.Advance(10 * time.Millisecond)
	assert.Equal(t, operation.Expired, f1.Outcome())
	assert.Equal(t, 1, fetch.Delayed())

	for _, op := range fetch.CancelForKey("b") {
		op.OperationState().ForceComplete()
	}
	assert.Equal(t, operation.Cancelled, f2.Outcome())
	assert.Equal(t, 0, fetch.Delayed(), "cancelled: counted down once")

	require.NoError(t, fetch.Close())
	assert.Equal(t, 1, produce.Delayed(), "the other purgatory is untouched")
	require.NoError(t, produce.Close())
	assert.Equal(t, operation.Closed, p1.Outcome())
	assert.Equal(t, 0, produce.Delayed())
	assert.Equal(t, 0, tm.Size(), "answered operations left the shared timer")

	other := newMockOp()
	early := newMockOp()
	p3, err := New[string]("after", WithTimer(tm), WithReaper(false))
	require.NoError(t, err)
	submit(t, p3, early, time.Minute, "x")
	tm.Close() // the owner closes the timer under a live purgatory
	done, err := p3.TryCompleteElseWatch(other, time.Minute, "x")
	require.NoError(t, err, "taken: an operation that cannot be timed is answered, not refused")
	assert.True(t, done, "answered before the call returned")
	assert.Equal(t, operation.Closed, other.Outcome())
	assert.Equal(t, int32(1), other.completions.Load())
	assert.Equal(t, 1, p3.Delayed())
	require.NoError(t, p3.Close())
	assert.Equal(t, operation.Closed, early.Outcome())
	assert.Equal(t, 0, p3.Delayed())
}
