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

type countPurger struct{ n atomic.Int32 }

func (p *countPurger) MaybePurge() { p.n.Add(1) }

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
