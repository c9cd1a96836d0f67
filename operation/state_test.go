package operation

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/timer"
)

// recorder observes completions.
type recorder struct {
	mu       sync.Mutex
	outcomes []Outcome
	panics   []string
}

func (r *recorder) Completed(_ Operation, o Outcome, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, o)
}

func (r *recorder) Panicked(_ Operation, cb string, _ any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.panics = append(r.panics, cb)
}

func newTimer(t *testing.T) (*timer.Timer, *timer.ManualClock) {
	t.Helper()
	clk := timer.NewManualClock(0)
	tm, err := timer.New(timer.WithClock(clk))
	require.NoError(t, err)
	t.Cleanup(func() { tm.Close() })
	return tm, clk
}

func TestOutcomeNames(t *testing.T) {
	want := []string{"completed", "expired", "forced", "cancelled", "closed"}
	for i, o := range Outcomes() {
		assert.Equal(t, want[i], o.String())
	}
	assert.Equal(t, "pending", Pending.String())
	assert.Equal(t, "unknown", Outcome(99).String())
}

func TestStartOnce(t *testing.T) {
	tm, _ := newTimer(t)
	op := NewFunc(nil, nil, nil)
	assert.False(t, op.ForceComplete(), "not submitted: nothing to complete")
	assert.Equal(t, Pending, op.Outcome())
	_, err := Start(op, tm, nil)
	require.NoError(t, err)
	_, err = Start(op, tm, nil)
	assert.ErrorIs(t, err, ErrSubmitted)
	assert.Panics(t, func() { op.ShareLock(&sync.Mutex{}) }, "too late to share a lock")
}

func TestSubmit(t *testing.T) {
	tm, _ := newTimer(t)
	rec := &recorder{}

	// First try succeeds: no watch.
	watched := false
	op := NewFunc(func() bool { return true }, nil, nil)
	_, done, err := Submit(op, tm, rec, func(*State) { watched = true })
	require.NoError(t, err)
	assert.True(t, done)
	assert.False(t, watched)

	// First try fails, the watch makes the second succeed.
	ready := false
	op2 := NewFunc(func() bool { return ready }, nil, nil)
	s2, done, err := Submit(op2, tm, rec, func(s *State) {
		assert.Same(t, op2.OperationState(), s)
		assert.False(t, op2.Mutex().TryLock(), "watched under the operation's lock")
		ready = true
	})
	require.NoError(t, err)
	assert.True(t, done)
	assert.Same(t, op2.OperationState(), s2)

	// Both fail.
	op3 := NewFunc(func() bool { return false }, nil, nil)
	_, done, err = Submit(op3, tm, rec, func(*State) {})
	require.NoError(t, err)
	assert.False(t, done)
	assert.Equal(t, []Outcome{Completed, Completed}, rec.outcomes)

	// A second submission fails and leaves the operation alone.
	_, _, err = Submit(op3, tm, rec, func(*State) { t.Error("watched twice") })
	assert.ErrorIs(t, err, ErrSubmitted)
	assert.Equal(t, Pending, op3.Outcome())
}

// TestSubmitConcurrently submits one operation from several goroutines at
// once, to several timers: exactly one submission wins, and the operation
// is bound to its timer.
func TestSubmitConcurrently(t *testing.T) {
	tms := make([]*timer.Timer, 4)
	for i := range tms {
		tms[i], _ = newTimer(t)
	}
	for range 200 {
		op := NewFunc(func() bool { return false }, nil, nil)
		var wins atomic.Int32
		var winner atomic.Pointer[timer.Timer]
		var wg sync.WaitGroup
		for _, tm := range tms {
			wg.Go(func() {
				_, _, err := Submit(op, tm, nil, func(*State) {})
				if err == nil {
					wins.Add(1)
					winner.Store(tm)
					return
				}
				assert.ErrorIs(t, err, ErrSubmitted)
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, wins.Load())
		_, err := Schedule(op.OperationState(), time.Second, false)
		require.NoError(t, err)
		assert.Equal(t, 1, winner.Load().Size(), "timed on the winner's timer")
		assert.True(t, op.ForceComplete())
		assert.Equal(t, 0, winner.Load().Size())
	}
}

func TestTryCompleteWatchedSkipsCompleted(t *testing.T) {
	tm, _ := newTimer(t)
	tries := 0
	op := NewFunc(func() bool { tries++; return false }, nil, nil)
	s, _ := Start(op, tm, nil)
	assert.False(t, TryCompleteWatched(s))
	assert.Equal(t, 1, tries)
	assert.True(t, op.ForceComplete())
	assert.False(t, TryCompleteWatched(s))
	assert.Equal(t, 1, tries, "never tried once completed")
}

func TestExpireAndSchedule(t *testing.T) {
	tm, clk := newTimer(t)
	rec := &recorder{}
	var order []string
	op := NewFunc(nil, func() { order = append(order, "complete") }, func() { order = append(order, "expire") })
	s, _ := Start(op, tm, rec)
	scheduled, err := Schedule(s, 10*time.Millisecond, true)
	require.NoError(t, err)
	assert.True(t, scheduled)
	assert.True(t, WasScheduled(s))
	clk.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"complete", "expire"}, order)
	assert.Equal(t, []Outcome{Expired}, rec.outcomes)

	// Completed before scheduling: not scheduled, not timed.
	op2 := NewFunc(nil, nil, nil)
	s2, _ := Start(op2, tm, rec)
	op2.ForceComplete()
	scheduled, err = Schedule(s2, time.Second, true)
	require.NoError(t, err)
	assert.False(t, scheduled)
	assert.Equal(t, 0, tm.Size())

	// Without the mark: timed all the same, and expires the same way.
	order = nil
	op3 := NewFunc(nil, func() { order = append(order, "complete") }, func() { order = append(order, "expire") })
	s3, _ := Start(op3, tm, rec)
	scheduled, err = Schedule(s3, 10*time.Millisecond, false)
	require.NoError(t, err)
	assert.False(t, scheduled, "not marked")
	assert.False(t, WasScheduled(s3))
	assert.Equal(t, 1, tm.Size(), "on the timer")
	clk.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"complete", "expire"}, order)

	// Without the mark, completed before scheduling: not timed either.
	op4 := NewFunc(nil, nil, nil)
	s4, _ := Start(op4, tm, rec)
	op4.ForceComplete()
	_, err = Schedule(s4, time.Second, false)
	require.NoError(t, err)
	assert.Equal(t, 0, tm.Size())
}

func TestCancelThenForce(t *testing.T) {
	tm, _ := newTimer(t)
	rec := &recorder{}
	op := NewFunc(nil, nil, nil)
	s, _ := Start(op, tm, rec)
	_, _ = Schedule(s, time.Minute, true)
	pending, wasScheduled := Cancel(s)
	assert.True(t, pending)
	assert.True(t, wasScheduled)
	assert.False(t, WasScheduled(s), "no longer waits for its deadline")
	assert.Equal(t, 0, tm.Size(), "off the timer")
	assert.True(t, op.ForceComplete())
	assert.Equal(t, Cancelled, op.Outcome())
	pending, _ = Cancel(s)
	assert.False(t, pending)
}

func TestCallbackPanicsAreRecovered(t *testing.T) {
	tm, _ := newTimer(t)
	rec := &recorder{}
	op := NewFunc(func() bool { panic("try") }, func() { panic("complete") }, nil)
	s, _ := Start(op, tm, rec)
	assert.False(t, TryCompleteWatched(s), "a panicking TryComplete is not yet")
	assert.True(t, op.Mutex().TryLock(), "and its lock was released")
	op.Mutex().Unlock()
	assert.True(t, op.ForceComplete())
	assert.Equal(t, []string{"TryComplete", "OnComplete"}, rec.panics)
	assert.Equal(t, []Outcome{Forced}, rec.outcomes, "observed although OnComplete panicked")
}

func TestCompleteClosed(t *testing.T) {
	tm, _ := newTimer(t)
	expired := false
	op := NewFunc(nil, nil, func() { expired = true })
	s, _ := Start(op, tm, nil)
	assert.True(t, CompleteClosed(s))
	assert.False(t, CompleteClosed(s))
	assert.Equal(t, Closed, op.Outcome())
	assert.False(t, expired)
	assert.False(t, IsPending(s))
}

func TestForceCompleteRacesExpiry(t *testing.T) {
	for range 200 {
		tm, clk := newTimer(t)
		var mu sync.Mutex
		n := 0
		op := NewFunc(nil, func() { mu.Lock(); n++; mu.Unlock() }, nil)
		s, _ := Start(op, tm, nil)
		_, _ = Schedule(s, time.Millisecond, true)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); clk.Advance(time.Millisecond) }()
		go func() { defer wg.Done(); op.ForceComplete() }()
		wg.Wait()
		require.Equal(t, 1, n)
	}
}
