package purgatory

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/internal/testwait"
	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/timer"
)

// An operation's OnComplete may close its own purgatory (a fatal error found
// while answering), whichever goroutine runs it: a timer worker, the
// reaper's goroutine (a timer without workers), the goroutine advancing a
// manual clock, a caller of CheckAndComplete or ForceComplete. The other
// pending operations are answered as Closed, and no goroutine is left
// (goleak, at the end of the package's tests).
func TestCloseFromACallback(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []Option
		manual bool
		finish func(p *Purgatory[string], op *mockOp, clk *timer.ManualClock)
	}{
		{name: "expiring on a timer worker", finish: func(*Purgatory[string], *mockOp, *timer.ManualClock) {}},
		{name: "expiring on the reaper's goroutine", opts: []Option{WithTimerOptions(timer.WithWorkers(0))},
			finish: func(*Purgatory[string], *mockOp, *timer.ManualClock) {}},
		{name: "expiring in ManualClock.Advance", manual: true,
			finish: func(_ *Purgatory[string], _ *mockOp, clk *timer.ManualClock) { clk.Advance(time.Millisecond) }},
		{name: "completed by CheckAndComplete", manual: true,
			finish: func(p *Purgatory[string], op *mockOp, _ *timer.ManualClock) {
				op.completable.Store(true)
				p.CheckAndComplete("k")
			}},
		{name: "forced", manual: true,
			finish: func(_ *Purgatory[string], op *mockOp, _ *timer.ManualClock) { op.ForceComplete() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *Purgatory[string]
			var clk *timer.ManualClock
			if tc.manual {
				p, clk = newTestPurgatory(t, tc.opts...)
			} else {
				var err error
				p, err = New[string](t.Name(), tc.opts...)
				require.NoError(t, err)
			}
			other := newMockOp()
			submit(t, p, other, time.Hour, "other")
			op, closed := submitClosing(t, p)
			testwait.Returns(t, "Close from "+tc.name, func() {
				tc.finish(p, op, clk)
				<-closed
			})
			assert.Equal(t, operation.Closed, other.Outcome(), "the others are answered")
			assert.Equal(t, int32(1), op.completions.Load())
			_, err := p.TryCompleteElseWatch(newMockOp(), time.Second, "k")
			assert.ErrorIs(t, err, ErrClosed)
		})
	}
}

// The same on a manual clock with the purgatory's own reaper running: the
// reaper waits on the manual clock too, and wakes when Advance moves it,
// wanting to advance the timer that Advance is advancing. Close, called
// from an expiry inside Advance, stops the reaper and waits for it; the
// reaper must not be stuck waiting for Advance to finish. Whether the
// reaper is waiting there at that moment is up to the scheduler, so the
// test runs it a number of times (it hung in about half of them).
func TestCloseFromACallbackOnAManualClockWithAReaper(t *testing.T) {
	for i := range 30 {
		for _, workers := range []int{0, 2} {
			clk := timer.NewManualClock(0)
			p, err := New[string](t.Name(), WithClock(clk), WithTimerOptions(timer.WithWorkers(workers)))
			require.NoError(t, err)
			op, closed := submitClosing(t, p)
			testwait.Returns(t, fmt.Sprintf("Advance whose expiry closes the purgatory (run %d, %d workers)", i, workers), func() {
				clk.Advance(time.Millisecond)
				<-closed
			})
			assert.Equal(t, operation.Expired, op.Outcome())
		}
	}
}

// submitClosing submits, under key "k" and due in a millisecond, an
// operation whose OnComplete closes p, and returns it with a channel closed
// once that Close has returned.
func submitClosing(t *testing.T, p *Purgatory[string]) (*mockOp, <-chan struct{}) {
	t.Helper()
	op := newMockOp()
	closed := make(chan struct{})
	op.onComplete = func() {
		assert.NoError(t, p.Close())
		close(closed)
	}
	submit(t, p, op, time.Millisecond, "k")
	return op, closed
}
