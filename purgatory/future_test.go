package purgatory

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/timer"
)

func newFuturePurgatory(t *testing.T) (*FuturePurgatory[int], *timer.ManualClock) {
	t.Helper()
	clk := timer.NewManualClock(0)
	fp, err := NewFuturePurgatory[int](t.Name(), WithClock(clk), WithReaper(false))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, fp.Close()) })
	return fp, clk
}

func TestFutureCompletesWhenAllDone(t *testing.T) {
	fp, _ := newFuturePurgatory(t)
	fs := []*Future[int]{NewFuture[int](), NewFuture[int](), NewFuture[int]()}
	var got []int
	calls := 0
	_, err := fp.Await(fs, time.Minute, func(fs []*Future[int]) {
		calls++
		for _, f := range fs {
			v, err := f.Result()
			require.NoError(t, err)
			got = append(got, v)
		}
	})
	require.NoError(t, err)
	fs[1].Complete(2, nil)
	fs[0].Complete(1, nil)
	assert.Zero(t, calls, "one still pending")
	assert.True(t, fs[2].Complete(3, nil))
	assert.False(t, fs[2].Complete(4, nil), "first result wins")
	assert.Equal(t, 1, calls)
	assert.Equal(t, []int{1, 2, 3}, got)
	assert.Equal(t, 0, fp.Purgatory().Delayed())
}

func TestFutureTimesOut(t *testing.T) {
	fp, clk := newFuturePurgatory(t)
	fs := []*Future[int]{NewFuture[int](), NewFuture[int]()}
	fs[0].Complete(7, nil)
	var errs []error
	_, err := fp.Await(fs, 50*time.Millisecond, func(fs []*Future[int]) {
		for _, f := range fs {
			assert.True(t, f.Done(), "the callback sees every future done")
			_, err := f.Result()
			errs = append(errs, err)
		}
	})
	require.NoError(t, err)
	clk.Advance(49 * time.Millisecond)
	assert.Empty(t, errs)
	clk.Advance(time.Millisecond)
	assert.Equal(t, []error{nil, ErrTimeout}, errs)
	assert.False(t, fs[1].Complete(1, nil), "failed by the timeout")
}

func TestFutureAlreadyDoneRunsAtOnce(t *testing.T) {
	fp, _ := newFuturePurgatory(t)
	f := NewFuture[int]()
	f.Complete(1, nil)
	ran := false
	d, err := fp.Await([]*Future[int]{f}, time.Minute, func([]*Future[int]) { ran = true })
	require.NoError(t, err)
	assert.True(t, ran)
	assert.True(t, d.IsCompleted())
	assert.Equal(t, 0, fp.Purgatory().Watched())
}

func TestFutureCompletedConcurrently(t *testing.T) {
	fp, _ := newFuturePurgatory(t)
	for range 200 {
		fs := []*Future[int]{NewFuture[int](), NewFuture[int]()}
		var calls sync.WaitGroup
		calls.Add(1)
		var wg sync.WaitGroup
		for i, f := range fs {
			wg.Add(1)
			go func() { defer wg.Done(); f.Complete(i, nil) }()
		}
		_, err := fp.Await(fs, time.Minute, func([]*Future[int]) { calls.Done() })
		require.NoError(t, err)
		wg.Wait()
		calls.Wait() // exactly once: a second Done would panic
	}
	assert.Equal(t, 0, fp.Purgatory().Delayed())
}

func TestFutureClosed(t *testing.T) {
	clk := timer.NewManualClock(0)
	fp, err := NewFuturePurgatory[string](t.Name(), WithClock(clk), WithReaper(false))
	require.NoError(t, err)
	f := NewFuture[string]()
	var got error
	_, err = fp.Await([]*Future[string]{f}, time.Minute, func(fs []*Future[string]) { _, got = fs[0].Result() })
	require.NoError(t, err)
	require.NoError(t, fp.Close())
	assert.ErrorIs(t, got, ErrClosed)
}
