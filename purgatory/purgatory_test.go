package purgatory

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/operation"
)

// Kafka's DelayedOperationTest, in Go, on the manual clock.

func TestSatisfiedAtOnceIsNeverWatched(t *testing.T) {
	p, _ := newTestPurgatory(t)
	op := newMockOp()
	op.completable.Store(true)
	assert.True(t, submit(t, p, op, time.Second, "k"), "completed by the call")
	assert.Equal(t, int32(1), op.completions.Load(), "answered before the call returned")
	assert.Equal(t, operation.Completed, op.Outcome())
	assert.Equal(t, int32(1), op.tries.Load(), "one try, no watch")
	assert.Equal(t, 0, p.Watched())
	assert.Equal(t, 0, p.Delayed())
	assert.Equal(t, 0, p.tm.Size(), "never timed")
}

func TestCompletesOnCheckNotBefore(t *testing.T) {
	p, _ := newTestPurgatory(t)
	op := newMockOp()
	assert.False(t, submit(t, p, op, time.Second, "k"))
	assert.Equal(t, 1, p.Watched())
	assert.Equal(t, 1, p.Delayed())

	assert.Equal(t, 0, p.CheckAndComplete("k"), "condition false")
	assert.Equal(t, 0, p.CheckAndComplete("other"), "another key")
	op.completable.Store(true)
	assert.Zero(t, op.completions.Load(), "not answered before CheckAndComplete")
	assert.Equal(t, 1, p.CheckAndComplete("k"))
	assert.Equal(t, int32(1), op.completions.Load())
	assert.Equal(t, 1, p.Watched(), "its entry stays until the key's next check or a purge")
	assert.Equal(t, 0, p.CheckAndComplete("k"), "once")
	assert.Zero(t, op.expirations.Load())
	assert.Equal(t, 0, p.Watched(), "the second check compacted the key's list")
	assert.Equal(t, 0, p.Delayed())
	assert.Equal(t, 0, p.tm.Size(), "off the timer at once")
}

func TestExpiresAtDeadline(t *testing.T) {
	p, clk := newTestPurgatory(t)
	op := newMockOp()
	submit(t, p, op, 10*time.Millisecond, "k")
	clk.Advance(9 * time.Millisecond)
	assert.Zero(t, op.completions.Load(), "not before the deadline")
	clk.Advance(time.Millisecond)
	assert.Equal(t, int32(1), op.completions.Load(), "at the deadline")
	assert.Equal(t, int32(1), op.expirations.Load())
	assert.Equal(t, []string{"complete", "expire"}, op.order, "OnExpiration after OnComplete, as in Kafka")
	assert.Equal(t, operation.Expired, op.Outcome())
	assert.Equal(t, 0, p.Delayed())
	clk.Advance(time.Hour)
	assert.Equal(t, int32(1), op.completions.Load(), "once")
	assert.Equal(t, 0, p.CheckAndComplete("k"), "CheckAndComplete finds it completed")
}

func TestExpiryWithinOneTick(t *testing.T) {
	p, clk := newTestPurgatory(t)
	clk.Advance(300 * time.Microsecond) // deadlines off the tick grid
	var at time.Duration
	op := newMockOp()
	op.onComplete = func() { at = clk.Now() }
	submit(t, p, op, 10*time.Millisecond, "k")
	due := 10*time.Millisecond + 300*time.Microsecond
	for at == 0 {
		clk.Advance(50 * time.Microsecond)
	}
	assert.GreaterOrEqual(t, at, due, "never early")
	assert.Less(t, at-due, time.Millisecond, "within one tick")
}

func TestMultiKeyCompletesOnce(t *testing.T) {
	p, _ := newTestPurgatory(t)
	op := newMockOp()
	keys := []string{"k1", "k2", "k3"}
	submit(t, p, op, time.Second, keys...)
	assert.Equal(t, 3, p.Watched())
	op.completable.Store(true)

	var wg sync.WaitGroup
	counts := make([]int, len(keys))
	for i, k := range keys {
		wg.Add(1)
		go func() { defer wg.Done(); counts[i] = p.CheckAndComplete(k) }()
	}
	wg.Wait()
	assert.Equal(t, 1, counts[0]+counts[1]+counts[2], "one key completes it; the others find it completed")
	assert.Equal(t, int32(1), op.completions.Load())
}

func TestTryCompleteUnderLockWatchBeforeSecondTry(t *testing.T) {
	p, _ := newTestPurgatory(t)
	op := newMockOp()
	var watchedAtTry []int
	op.onTry = func(int32) {
		assert.False(t, op.Mutex().TryLock(), "TryComplete runs with the operation's lock held")
		watchedAtTry = append(watchedAtTry, p.Watched())
	}
	submit(t, p, op, time.Second, "k1", "k2")
	assert.Equal(t, []int{0, 2}, watchedAtTry, "first try before watching, second after watching every key")

	op.completable.Store(true)
	p.CheckAndComplete("k1")
	assert.Len(t, watchedAtTry, 3)
}

func TestEmptyKeysIsAnError(t *testing.T) {
	p, _ := newTestPurgatory(t)
	op := newMockOp()
	_, err := p.TryCompleteElseWatch(op, time.Second)
	assert.ErrorIs(t, err, ErrNoKeys)
	assert.Zero(t, op.tries.Load(), "untouched")
	_, err = p.TryCompleteElseWatch(op, time.Second, "k")
	assert.NoError(t, err, "and still usable")
}

func TestSubmitTwiceIsAnError(t *testing.T) {
	p, _ := newTestPurgatory(t)
	op := newMockOp()
	submit(t, p, op, time.Second, "k")
	_, err := p.TryCompleteElseWatch(op, time.Second, "k")
	assert.ErrorIs(t, err, ErrSubmitted)
	assert.Equal(t, 1, p.Watched())
}

func TestCancelForKey(t *testing.T) {
	p, _ := newTestPurgatory(t)
	a, b, c := newMockOp(), newMockOp(), newMockOp()
	submit(t, p, a, time.Second, "k1")
	submit(t, p, b, time.Second, "k1")
	submit(t, p, c, time.Second, "k2")

	cancelled := p.CancelForKey("k1")
	require.Len(t, cancelled, 2)
	assert.Same(t, a, cancelled[0], "oldest first")
	assert.Same(t, b, cancelled[1])
	assert.Equal(t, 1, p.Delayed())
	assert.Equal(t, 1, p.Watched())
	assert.Zero(t, a.completions.Load(), "taken off, not completed: the caller answers")
	assert.Empty(t, p.CancelForKey("missing"))

	assert.True(t, a.ForceComplete())
	assert.Equal(t, operation.Cancelled, a.Outcome())
	assert.Equal(t, int32(1), a.completions.Load())
	assert.False(t, a.ForceComplete(), "answered once")
	assert.Equal(t, 1, p.Delayed(), "a cancelled operation is not counted twice")
}

func TestPurgeAccounting(t *testing.T) {
	// Kafka's testRequestPurge.
	p, _ := newTestPurgatory(t)
	r1, r2, r3 := newMockOp(), newMockOp(), newMockOp()
	submit(t, p, r1, time.Minute, "k1")
	submit(t, p, r2, time.Minute, "k1", "k2")
	submit(t, p, r3, time.Minute, "k1", "k2", "k3")
	assert.Equal(t, 3, p.Delayed())
	assert.Equal(t, 6, p.Watched())

	r2.completable.Store(true)
	assert.True(t, r2.ForceComplete())
	assert.Equal(t, 2, p.Delayed(), "completing drops delayed at once")
	r3.completable.Store(true)
	assert.True(t, r3.ForceComplete())
	assert.Equal(t, 1, p.Delayed())
	assert.Equal(t, 6, p.Watched(), "watch entries stay until purged")

	for _, step := range []struct {
		key     string
		watched int
	}{{"k1", 4}, {"k2", 2}, {"k3", 1}} { // in this order: each count depends on the ones before
		p.CheckAndComplete(step.key)
		assert.Equal(t, step.watched, p.Watched(), "after checking %s", step.key)
	}
	assert.Equal(t, 1, p.w.Keys(), "empty keys are dropped")
}

func TestPurgeDropsCompletedAndEmptyKeys(t *testing.T) {
	p, clk := newTestPurgatory(t, WithPurgeInterval(100))
	var live, done []*mockOp
	for i := range 1000 {
		op := newMockOp()
		submit(t, p, op, time.Minute, key(i%50), key(50+i%7))
		if i%10 == 0 {
			live = append(live, op)
		} else {
			done = append(done, op)
		}
	}
	// Completed after every submission: a list compacts itself when it is
	// full, so completing while submitting would leave less to purge. With
	// no reaper, a completion that finds the garbage past the interval
	// purges (it looks once the bound passes twice the interval), so 1800
	// garbage entries never build up.
	for _, op := range done {
		op.ForceComplete()
	}
	assert.LessOrEqual(t, p.Garbage(), 3*100, "purged as it went, within the bound")
	p.Purge()
	assert.Equal(t, 2*len(live), p.Watched(), "watched falls to the live count")
	assert.Equal(t, 5+7, p.w.Keys(), "keys whose operations all completed are dropped")
	for _, op := range live[:40] {
		op.ForceComplete()
	}
	assert.Equal(t, 80, p.Garbage(), "within the interval: left for the reaper")
	maybePurge(p)
	assert.Equal(t, 200, p.Watched(), "a round with completions is not quiet")
	maybePurge(p)
	assert.Equal(t, 200, p.Watched(), "nor is one right after it")
	quietRound(p, clk) // a reaper wait with none: the load has ended, whatever is listed goes
	assert.Equal(t, 120, p.Watched(), "only the live entries are left")
	for _, op := range live[40:] {
		op.ForceComplete()
	}
	maybePurge(p)
	quietRound(p, clk)
	assert.Equal(t, 0, p.Watched())
	assert.Equal(t, 0, p.w.Keys())

	// The key's list keeps the entry CheckAndComplete completed, for the
	// key's next watch, until the reaper finds a quiet round.
	op := newMockOp()
	submit(t, p, op, time.Minute, "k")
	op.completable.Store(true)
	require.Equal(t, 1, p.CheckAndComplete("k"))
	assert.Equal(t, 1, p.w.Keys(), "listed until a purge")
	maybePurge(p)
	quietRound(p, clk)
	assert.Equal(t, 0, p.w.Keys(), "the heap returns to its idle size")
}

func key(i int) string { return "key-" + string(rune('a'+i%26)) + string(rune('a'+i/26)) }

// Pending counts operations, each once whatever its keys, from their
// submission until they are answered, however that happens; Watched counts
// watch entries, which outlive their operations until a check or a purge.
func TestPendingCountsOperationsNotAnswered(t *testing.T) {
	for _, eager := range []bool{false, true} {
		t.Run(fmt.Sprintf("eager=%v", eager), func(t *testing.T) { pendingCounts(t, eager) })
	}
}

func pendingCounts(t *testing.T, eager bool) {
	var opts []Option
	if eager {
		opts = append(opts, WithPurgeInterval(0))
	}
	p, clk := newTestPurgatory(t, opts...)
	atOnce := newMockOp()
	atOnce.completable.Store(true)
	submit(t, p, atOnce, time.Minute, "a")
	assert.Zero(t, p.Pending(), "completed at submission: never pending")

	checked, forced, expiring, cancelled, noDeadline := newMockOp(), newMockOp(), newMockOp(), newMockOp(), newMockOp()
	submit(t, p, checked, time.Minute, "a", "b", "c")
	submit(t, p, forced, time.Minute, "a", "b")
	submit(t, p, expiring, time.Second, "b")
	submit(t, p, cancelled, time.Minute, "d")
	submit(t, p, noDeadline, NoTimeout, "e")
	assert.Equal(t, 5, p.Pending())
	assert.Equal(t, 8, p.Watched(), "one entry per key")

	checked.completable.Store(true)
	p.CheckAndComplete("a")
	forced.ForceComplete()
	clk.Advance(time.Second)
	assert.Equal(t, 2, p.Pending())
	if eager {
		assert.Equal(t, 2, p.Watched(), "the completed operations left their lists")
	} else {
		assert.Equal(t, 8, p.Watched(), "the completed operations' entries are still listed")
		assert.Equal(t, 6, p.Garbage())
	}

	ops := p.CancelForKey("d")
	require.Len(t, ops, 1)
	assert.Equal(t, 2, p.Pending(), "handed back, not answered yet")
	ops[0].OperationState().ForceComplete()
	assert.Equal(t, 1, p.Pending())

	require.NoError(t, p.Close())
	assert.Zero(t, p.Pending(), "Close answers the rest")
	assert.Equal(t, operation.Closed, noDeadline.Outcome())
}

// Whoever Done wakes finds the operation counted as answered: Pending and
// the metrics are updated before the channel closes.
func TestDoneWakesAfterTheCounts(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p, _ := newTestPurgatory(t, WithRegisterer(reg))
	for range 100 {
		op := newMockOp()
		submit(t, p, op, time.Minute, "k")
		woken := make(chan [2]float64)
		go func() {
			<-op.Done()
			woken <- [2]float64{float64(p.Pending()), testutil.ToFloat64(p.obs.m.completions[operation.Forced])}
		}()
		before := testutil.ToFloat64(p.obs.m.completions[operation.Forced])
		op.ForceComplete()
		got := <-woken
		assert.Zero(t, got[0], "Pending, read by the goroutine Done woke")
		assert.Equal(t, before+1, got[1], "the completion counted")
	}
}
