package timer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/internal/testwait"
)

// A task may close the timer it runs on, whichever goroutine runs it: a
// worker, the auto-advance goroutine, or the goroutine advancing a manual
// clock. Close then stops everything but the goroutine it is called from,
// which exits when the task returns (goleak checks it at the end).
func TestTaskClosesItsOwnTimer(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"workers", []Option{WithWorkers(2)}},
		{"auto-advance, no workers", []Option{WithWorkers(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := New(tc.opts...)
			require.NoError(t, err)
			later := NewTask(Func(func() { t.Error("a pending task ran after Close") }))
			require.NoError(t, tm.Schedule(later, time.Hour))
			var pending []*Task
			closed := make(chan struct{})
			_, err = tm.AfterFunc(time.Millisecond, func() {
				pending = tm.Close()
				close(closed)
			})
			require.NoError(t, err)
			testwait.Returns(t, "Close from a task", func() { <-closed })
			assert.Equal(t, []*Task{later}, pending, "the task still pending is handed back")
			assert.ErrorIs(t, tm.Schedule(NewTask(Func(func() {})), time.Second), ErrClosed)
			assert.Nil(t, tm.Close(), "idempotent")
		})
	}
	t.Run("manual clock", func(t *testing.T) {
		tm, clk := newManual(t, 0)
		after := newRecorder(clk)
		require.NoError(t, tm.Schedule(&after.Task, 2*time.Second))
		var pending []*Task
		_, err := tm.AfterFunc(time.Second, func() { pending = tm.Close() })
		require.NoError(t, err)
		testwait.Returns(t, "ManualClock.Advance running a task that closes its timer", func() { clk.Advance(3 * time.Second) })
		assert.Equal(t, []*Task{&after.Task}, pending)
		assert.Empty(t, after.ran(), "closed before it was due: it never runs")
	})
}

// AdvanceClock returns once its context is done, even while it waits for
// another advance: here ManualClock.Advance is running a task that waits
// for AdvanceClock's caller to give up (a purgatory's Close from an
// expiry stops its reaper, which is in AdvanceClock, and waits for it).
func TestAdvanceClockStopsWhileAnotherAdvanceRuns(t *testing.T) {
	tm, clk := newManual(t, 0)
	running, release := make(chan struct{}), make(chan struct{})
	require.NoError(t, tm.Schedule(NewTask(Func(func() {
		close(running)
		<-release
	})), time.Millisecond))
	advanced := make(chan struct{})
	go func() {
		defer close(advanced)
		clk.Advance(time.Millisecond)
	}()
	<-running

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	testwait.Returns(t, "AdvanceClock with a done context while Advance holds the timer", func() {
		assert.False(t, tm.AdvanceClock(ctx, time.Hour))
	})
	close(release)
	<-advanced
}
