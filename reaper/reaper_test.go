package reaper

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock waits like a timer with nothing due: maxWait, or until ctx ends.
type fakeClock struct {
	calls atomic.Int32
	waits []time.Duration
}

func (c *fakeClock) AdvanceClock(ctx context.Context, maxWait time.Duration) bool {
	c.calls.Add(1)
	c.waits = append(c.waits, maxWait)
	select {
	case <-time.After(maxWait):
	case <-ctx.Done():
	}
	return false
}

// countPurger counts its turns; with a gate, each turn waits for it.
type countPurger struct {
	n    atomic.Int32
	gate chan struct{}
}

func (p *countPurger) MaybePurge() {
	p.n.Add(1)
	if p.gate != nil {
		<-p.gate
	}
}

func TestAdvancesWithBoundedWaitAndPurges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk, pur := &fakeClock{}, &countPurger{}
		r, err := New(clk, pur, 0, nil)
		require.NoError(t, err)
		r.Start()
		time.Sleep(time.Second)
		synctest.Wait()
		r.Stop()
		assert.Equal(t, int32(6), clk.calls.Load(), "one round per 200ms, the sixth interrupted by Stop")
		assert.Equal(t, int32(5), pur.n.Load(), "a purge chance after each completed round")
		assert.Equal(t, DefaultMaxWait, clk.waits[0])
	})
}

func TestPurgeOnlyWithoutClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pur := &countPurger{}
		r, err := New(nil, pur, 100*time.Millisecond, nil)
		require.NoError(t, err)
		r.Start()
		time.Sleep(550 * time.Millisecond)
		synctest.Wait()
		r.Stop()
		assert.Equal(t, int32(5), pur.n.Load())
	})
}

func TestStopInterruptsWaitAndIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &fakeClock{}
		r, err := New(clk, nil, time.Hour, nil)
		require.NoError(t, err)
		r.Start()
		r.Start() // no second goroutine
		synctest.Wait()
		start := time.Now()
		r.Stop()
		assert.Zero(t, time.Since(start), "Stop does not wait out the hour")
		r.Stop()
		assert.Equal(t, int32(1), clk.calls.Load())
		r.Start() // a stopped reaper stays stopped
		synctest.Wait()
		assert.Equal(t, int32(1), clk.calls.Load())
	})
}

func TestNothingToDo(t *testing.T) {
	_, err := New(nil, nil, 0, nil)
	assert.ErrorIs(t, err, ErrNothingToDo)
}

func TestWakeRunsARoundNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, withClock := range []bool{true, false} {
			clk, pur := &fakeClock{}, &countPurger{}
			var c Clock
			if withClock {
				c = clk
			}
			r, err := New(c, pur, time.Hour, nil)
			require.NoError(t, err)
			r.Wake() // not started: nothing to wake, nothing breaks
			r.Start()
			synctest.Wait()
			start := time.Now()
			pur.gate = make(chan struct{})
			r.Wake()
			synctest.Wait() // the round ended: the reaper is in its purge turn
			r.Wake()        // merged with the first: the round it would end has ended
			close(pur.gate)
			synctest.Wait()
			assert.Equal(t, int32(1), pur.n.Load(), "clock %v: one purge turn, at once", withClock)
			assert.Zero(t, time.Since(start), "without waiting out the hour")
			r.Wake()
			synctest.Wait()
			assert.Equal(t, int32(2), pur.n.Load(), "each new round can be woken")
			r.Stop()
		}
	})
}

// stoppingClock's advance runs an expiration that stops the reaper, as an
// operation closing its purgatory from OnComplete does when the timer has
// no workers and its tasks run on the reaper's goroutine.
type stoppingClock struct{ r *Reaper }

func (c *stoppingClock) AdvanceClock(ctx context.Context, _ time.Duration) bool {
	c.r.Stop()
	<-ctx.Done() // stopped: the round's context ends
	return true
}

func TestStopFromTheReapersOwnGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &stoppingClock{}
		r, err := New(clk, nil, time.Hour, nil)
		require.NoError(t, err)
		clk.r = r
		r.Start()
		synctest.Wait() // a deadlock would leave the bubble's goroutines blocked forever
		r.Stop()        // from outside too: returns, idempotent
	})
}
