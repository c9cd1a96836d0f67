package lifecycle

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/timer"
)

func TestSubmit(t *testing.T) {
	tm, _ := newTimer(t)
	rec := &recorder{}

	// The first try succeeds: nothing is watched, nothing listed.
	watched := false
	op := &fakeOp{try: func() bool { return true }}
	done, err := submit(&op.State, op, tm, rec, 2, func(*State) { watched = true })
	require.NoError(t, err)
	assert.True(t, done)
	assert.False(t, watched)

	// The first try fails, the watch makes the second succeed: its two
	// entries are reported left behind.
	ready := false
	op2 := &fakeOp{try: func() bool { return ready }}
	done, err = submit(&op2.State, op2, tm, rec, 2, func(s *State) {
		assert.Same(t, &op2.State, s)
		assert.False(t, op2.Mutex().TryLock(), "watched under the operation's lock")
		ready = true
	})
	require.NoError(t, err)
	assert.True(t, done)

	// Both fail.
	op3 := &fakeOp{}
	s3 := start(t, op3, tm, rec, 1)
	assert.Equal(t, []Outcome{Completed, Completed}, rec.outcomes)
	assert.Equal(t, []int{0, 2}, rec.listed)

	// A second submission fails and leaves the operation alone.
	_, err = submit(s3, op3, tm, rec, 1, func(*State) { t.Error("watched twice") })
	assert.ErrorIs(t, err, ErrSubmitted)
	assert.Equal(t, Pending, op3.Outcome())
	assert.Panics(t, func() { op3.ShareLock(&sync.Mutex{}) }, "too late to share a lock")
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
		op := &fakeOp{}
		var wins atomic.Int32
		var winner atomic.Pointer[timer.Timer]
		var wg sync.WaitGroup
		for _, tm := range tms {
			wg.Go(func() {
				_, err := submit(&op.State, op, tm, nil, 1, func(*State) {})
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
		_, err := Schedule(&op.State, time.Second, false)
		require.NoError(t, err)
		assert.Equal(t, 1, winner.Load().Size(), "timed on the winner's timer")
		assert.True(t, op.ForceComplete())
		assert.Equal(t, 0, winner.Load().Size())
	}
}

func TestForceCompleteBeforeSubmissionDoesNothing(t *testing.T) {
	op := &fakeOp{}
	assert.False(t, op.ForceComplete(), "not submitted: nothing to complete")
	assert.False(t, CompleteWith(&op.State, Closed))
	assert.Equal(t, Pending, op.Outcome())
}

func TestTryWatchedSkipsCompleted(t *testing.T) {
	tm, _ := newTimer(t)
	tries := 0
	op := &fakeOp{try: func() bool { tries++; return false }}
	s := start(t, op, tm, nil, 1)
	require.Equal(t, 2, tries, "submission tries twice")
	assert.False(t, TryWatched(s))
	assert.Equal(t, 3, tries)
	assert.True(t, op.ForceComplete())
	assert.False(t, TryWatched(s))
	assert.Equal(t, 3, tries, "never tried once completed")
}

func TestExpireAndSchedule(t *testing.T) {
	tm, clk := newTimer(t)
	rec := &recorder{}
	var order []string
	op := &fakeOp{complete: func() { order = append(order, "complete") }, expire: func() { order = append(order, "expire") }}
	s := start(t, op, tm, rec, 1)
	scheduled, err := Schedule(s, 10*time.Millisecond, true)
	require.NoError(t, err)
	assert.True(t, scheduled)
	assert.True(t, WasScheduled(s))
	clk.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"complete", "expire"}, order)
	assert.Equal(t, []Outcome{Expired}, rec.outcomes)
	assert.Equal(t, []int{1}, rec.listed, "its entry is left behind")

	// Completed before scheduling: not scheduled, not timed.
	op2 := &fakeOp{}
	s2 := start(t, op2, tm, rec, 1)
	op2.ForceComplete()
	scheduled, err = Schedule(s2, time.Second, true)
	require.NoError(t, err)
	assert.False(t, scheduled)
	assert.Equal(t, 0, tm.Size())

	// Without the mark: timed all the same, and expires the same way.
	order = nil
	op3 := &fakeOp{complete: func() { order = append(order, "complete") }, expire: func() { order = append(order, "expire") }}
	s3 := start(t, op3, tm, rec, 1)
	scheduled, err = Schedule(s3, 10*time.Millisecond, false)
	require.NoError(t, err)
	assert.False(t, scheduled, "not marked")
	assert.False(t, WasScheduled(s3))
	assert.Equal(t, 1, tm.Size(), "on the timer")
	clk.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"complete", "expire"}, order)

	// Without the mark, completed before scheduling: not timed either.
	op4 := &fakeOp{}
	s4 := start(t, op4, tm, rec, 1)
	op4.ForceComplete()
	_, err = Schedule(s4, time.Second, false)
	require.NoError(t, err)
	assert.Equal(t, 0, tm.Size())
}

// A submission racing CancelForKey: the key is cancelled after the watch
// and before the deadline is set. The operation must not be timed, or it
// would expire after CancelForKey handed it to its caller, who answers it.
func TestScheduleAfterCancelLeavesNothingOnTheTimer(t *testing.T) {
	for _, mark := range []bool{false, true} {
		tm, clk := newTimer(t)
		expired := false
		op := &fakeOp{expire: func() { expired = true }}
		s := start(t, op, tm, nil, 1)
		pending, wasScheduled := Cancel(s)
		require.True(t, pending)
		assert.False(t, wasScheduled)
		scheduled, err := Schedule(s, time.Second, mark)
		require.NoError(t, err)
		assert.False(t, scheduled, "mark %v: a cancelled operation is not scheduled", mark)
		assert.Equal(t, 0, tm.Size(), "mark %v: nothing on the timer", mark)
		clk.Advance(2 * time.Second)
		assert.False(t, expired, "mark %v", mark)
		assert.True(t, op.ForceComplete())
		assert.Equal(t, Cancelled, op.Outcome())
	}
}

func TestCancelThenForce(t *testing.T) {
	tm, _ := newTimer(t)
	rec := &recorder{}
	op := &fakeOp{}
	s := start(t, op, tm, rec, 1)
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

func TestUnlistCountsEntriesOut(t *testing.T) {
	tm, _ := newTimer(t)
	rec := &recorder{}
	op := &fakeOp{}
	s := start(t, op, tm, rec, 3)
	assert.True(t, Unlist(s))
	assert.True(t, op.ForceComplete())
	assert.Equal(t, []int{2}, rec.listed, "one of three entries was dropped while pending")
	assert.False(t, Unlist(s), "completed: its entries were counted as garbage")
}

func TestCallbackPanicsAreRecovered(t *testing.T) {
	tm, _ := newTimer(t)
	rec := &recorder{}
	op := &fakeOp{try: func() bool { panic("try") }, complete: func() { panic("complete") }}
	s := start(t, op, tm, rec, 1)
	assert.False(t, TryWatched(s), "a panicking TryComplete is not yet")
	assert.True(t, op.Mutex().TryLock(), "and its lock was released")
	op.Mutex().Unlock()
	assert.True(t, op.ForceComplete())
	assert.Equal(t, []string{"TryComplete", "TryComplete", "TryComplete", "OnComplete"}, rec.panics)
	assert.Equal(t, []Outcome{Forced}, rec.outcomes, "observed although OnComplete panicked")
	select {
	case <-op.Done():
	default:
		t.Error("done although OnComplete panicked")
	}
}

func TestCompleteWith(t *testing.T) {
	tm, _ := newTimer(t)
	expired := false
	op := &fakeOp{expire: func() { expired = true }}
	s := start(t, op, tm, nil, 1)
	_, _ = Schedule(s, time.Minute, false)
	assert.True(t, CompleteWith(s, Closed))
	assert.False(t, CompleteWith(s, Closed))
	assert.Equal(t, Closed, op.Outcome())
	assert.False(t, expired)
	assert.False(t, IsPending(s))
	assert.Equal(t, 0, tm.Size(), "taken off the timer")
}

func TestForceCompleteRacesExpiry(t *testing.T) {
	for range 200 {
		tm, clk := newTimer(t)
		var mu sync.Mutex
		n := 0
		op := &fakeOp{complete: func() { mu.Lock(); n++; mu.Unlock() }}
		s := start(t, op, tm, nil, 1)
		_, _ = Schedule(s, time.Millisecond, true)
		var wg sync.WaitGroup
		wg.Go(func() { clk.Advance(time.Millisecond) })
		wg.Go(func() { op.ForceComplete() })
		wg.Wait()
		require.Equal(t, 1, n)
	}
}
