package timer

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gopurgatory/purgatory/internal/panics"
)

func TestDueTaskRunsAtOnce(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, math.MinInt64} {
		tm, clk := newManual(t, time.Second)
		rec := newRecorder(clk)
		require.NoError(t, tm.Schedule(&rec.Task, d))
		assert.Equal(t, []time.Duration{time.Second}, rec.ran(), "delay %v runs before Schedule returns", d)
		assert.Equal(t, 0, tm.Size())
	}
}

func TestNeverEarlyWithinTick(t *testing.T) {
	// Deadlines that are not tick-aligned run at the next tick boundary: never
	// before the deadline, less than one tick after.
	tm, clk := newManual(t, 0, WithTick(time.Millisecond))
	clk.Advance(300 * time.Microsecond)
	var recs []*recorder
	for _, d := range []time.Duration{1, 100 * time.Microsecond, 700 * time.Microsecond, 701 * time.Microsecond, 5*time.Millisecond + 1} {
		r := newRecorder(clk)
		require.NoError(t, tm.Schedule(&r.Task, d))
		recs = append(recs, r)
	}
	for range 10_000 {
		clk.Advance(time.Microsecond)
	}
	for _, r := range recs {
		runs := r.ran()
		require.Len(t, runs, 1)
		assert.GreaterOrEqual(t, runs[0], r.Deadline(), "never early")
		assert.Less(t, runs[0]-r.Deadline(), time.Millisecond, "less than a tick late")
	}
}

// TestTickIsTheRunGranularity: Tick reports the timer's tick, and a task
// due anywhere within a tick runs at that tick's end: tasks whose
// deadlines share a tick (what Tick lets a caller group) run together,
// none of them early.
func TestTickIsTheRunGranularity(t *testing.T) {
	def, _ := newManual(t, 0)
	assert.Equal(t, DefaultTick, def.Tick())
	tm, clk := newManual(t, 0, WithTick(4*time.Millisecond))
	require.Equal(t, 4*time.Millisecond, tm.Tick())
	var recs []*recorder
	for _, d := range []time.Duration{time.Millisecond, 3 * time.Millisecond, tm.Tick()} {
		r := newRecorder(clk)
		require.NoError(t, tm.Schedule(&r.Task, d))
		recs = append(recs, r)
	}
	for range 8 {
		clk.Advance(time.Millisecond)
	}
	for _, r := range recs {
		assert.Equal(t, []time.Duration{tm.Tick()}, r.ran(), "deadline %v: at the tick's end", r.Deadline())
	}
}

func TestCancel(t *testing.T) {
	tm, clk := newManual(t, 0)
	rec := newRecorder(clk)
	assert.False(t, tm.Cancel(&rec.Task), "never scheduled")
	require.NoError(t, tm.Schedule(&rec.Task, 50*time.Millisecond))
	assert.Equal(t, 1, tm.Size())
	assert.True(t, tm.Cancel(&rec.Task), "pending")
	assert.False(t, tm.Cancel(&rec.Task), "cancelled already")
	assert.Equal(t, 0, tm.Size())
	clk.Advance(time.Second)
	assert.Empty(t, rec.ran(), "a cancelled task never runs")

	require.NoError(t, tm.Schedule(&rec.Task, 10*time.Millisecond), "a cancelled task can be scheduled again")
	clk.Advance(10 * time.Millisecond)
	assert.Len(t, rec.ran(), 1)
	assert.False(t, tm.Cancel(&rec.Task), "ran already")
}

func TestCancelOnOtherTimer(t *testing.T) {
	a, clk := newManual(t, 0)
	b, _ := newManual(t, 0)
	rec := newRecorder(clk)
	require.NoError(t, a.Schedule(&rec.Task, time.Second))
	assert.False(t, b.Cancel(&rec.Task), "not pending on b")
	assert.ErrorIs(t, b.Schedule(&rec.Task, time.Second), ErrScheduled)
	assert.Equal(t, 1, a.Size())
}

func TestScheduleTwice(t *testing.T) {
	tm, clk := newManual(t, 0)
	rec := newRecorder(clk)
	require.NoError(t, tm.Schedule(&rec.Task, time.Second))
	assert.ErrorIs(t, tm.Schedule(&rec.Task, time.Millisecond), ErrScheduled)
	clk.Advance(time.Second)
	assert.Equal(t, []time.Duration{time.Second}, rec.ran(), "the first deadline holds")
}

func TestReschedule(t *testing.T) {
	tm, clk := newManual(t, 0)
	rec := newRecorder(clk)
	was, err := tm.Reschedule(&rec.Task, time.Second)
	require.NoError(t, err)
	assert.False(t, was, "not pending before")

	clk.Advance(900 * time.Millisecond)
	was, err = tm.Reschedule(&rec.Task, time.Second) // a heartbeat pushes the session out
	require.NoError(t, err)
	assert.True(t, was)
	assert.Equal(t, 1, tm.Size())

	clk.Advance(999 * time.Millisecond)
	assert.Empty(t, rec.ran())
	clk.Advance(time.Millisecond)
	assert.Equal(t, []time.Duration{1900 * time.Millisecond}, rec.ran())

	was, err = tm.Reschedule(&rec.Task, 0)
	require.NoError(t, err)
	assert.False(t, was)
	assert.Len(t, rec.ran(), 2, "rescheduled to now runs at once")
}

func TestMaxPending(t *testing.T) {
	tm, clk := newManual(t, 0, WithMaxPending(3))
	var recs []*recorder
	for range 3 {
		r := newRecorder(clk)
		require.NoError(t, tm.Schedule(&r.Task, time.Second))
		recs = append(recs, r)
	}
	extra := newRecorder(clk)
	assert.ErrorIs(t, tm.Schedule(&extra.Task, time.Second), ErrFull, "the cap is exact")
	_, err := tm.Reschedule(&recs[0].Task, 2*time.Second)
	assert.NoError(t, err, "moving a pending task does not add one")
	require.NoError(t, tm.Schedule(&extra.Task, 0), "a due task is not pending")
	assert.Len(t, extra.ran(), 1)

	require.True(t, tm.Cancel(&recs[1].Task))
	assert.NoError(t, tm.Schedule(&extra.Task, time.Second), "room after a cancel")
	assert.Equal(t, 3, tm.Size())
}

func TestFarDeadlinesDoNotOverflow(t *testing.T) {
	tm, clk := newManual(t, 0)
	year := 365 * 24 * time.Hour
	delays := []time.Duration{24 * time.Hour, 30 * 24 * time.Hour, year, 100 * year, math.MaxInt64}
	var recs []*recorder
	for _, d := range delays {
		r := newRecorder(clk)
		require.NoError(t, tm.Schedule(&r.Task, d))
		recs = append(recs, r)
	}
	require.NoError(t, tm.check())
	for i, d := range delays[:len(delays)-1] {
		clk.Advance(d - clk.Now() - time.Millisecond)
		assert.Empty(t, recs[i].ran(), "%v not early", d)
		clk.Advance(time.Millisecond)
		assert.Equal(t, []time.Duration{d}, recs[i].ran(), "%v on time", d)
		require.NoError(t, tm.check())
	}
	assert.Equal(t, 1, tm.Size(), "the deadline at the end of time is still pending")
	assert.LessOrEqual(t, tm.Stats().Levels, 12)
}

func TestStallCatchesUp(t *testing.T) {
	// After a stall the clock jumps; every bucket passed is flushed, in order.
	tm, clk := newManual(t, 0)
	var order []int
	for i := range 100 {
		_, err := tm.AfterFunc(time.Duration(i+1)*37*time.Millisecond, func() { order = append(order, i) })
		require.NoError(t, err)
	}
	clk.Advance(time.Hour)
	require.Len(t, order, 100)
	for i := range order {
		assert.Equal(t, i, order[i], "in deadline order")
	}
}

func TestTaskScheduledDuringFlushIsNotLost(t *testing.T) {
	tm, clk := newManual(t, 0)
	var got []time.Duration
	var chain func()
	n := 0
	chain = func() {
		got = append(got, clk.Now())
		if n++; n < 5 {
			_, err := tm.AfterFunc(time.Duration(n)*time.Millisecond, chain)
			require.NoError(t, err)
		}
	}
	_, err := tm.AfterFunc(10*time.Millisecond, chain)
	require.NoError(t, err)
	clk.Advance(time.Second)
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{10 * ms, 11 * ms, 13 * ms, 16 * ms, 20 * ms}, got)
}

func TestPanicDoesNotStopLaterTasks(t *testing.T) {
	core, logs := observer.New(zapcore.ErrorLevel)
	tm, clk := newManual(t, 0, WithLogger(zap.New(core)))
	_, err := tm.AfterFunc(time.Millisecond, func() { panic("boom") })
	require.NoError(t, err)
	var ran atomic.Int32
	for i := range 3 {
		_, err := tm.AfterFunc(time.Duration(i+1)*time.Millisecond, func() { ran.Add(1) })
		require.NoError(t, err)
	}
	clk.Advance(10 * time.Millisecond)
	assert.Equal(t, int32(3), ran.Load(), "tasks after the panic, in its batch and later, run")
	assert.Equal(t, int64(1), tm.Stats().Panics)
	require.Equal(t, 1, logs.Len())
	assert.Contains(t, logs.All()[0].Message, "panicked")
}

// Without a logger a task's panic is written to standard error with its
// stack, and a periodic task's too, each kind at most once a minute.
func TestPanicWithoutALoggerGoesToStandardError(t *testing.T) {
	var out bytes.Buffer
	defer panics.SetForTest(&out, func() time.Time { return time.Unix(0, 0) })()
	tm, clk := newManual(t, 0)
	for range 2 {
		_, err := tm.AfterFunc(time.Millisecond, func() { panic("boom") })
		require.NoError(t, err)
	}
	_, err := tm.ScheduleAtFixedRate(time.Millisecond, time.Millisecond, func() { panic("tick boom") })
	require.NoError(t, err)
	clk.Advance(10 * time.Millisecond)
	assert.Equal(t, int64(3), tm.Stats().Panics)
	assert.Equal(t, 1, strings.Count(out.String(), "timer: task panicked: boom"), out.String())
	assert.Equal(t, 1, strings.Count(out.String(), "timer: periodic task panicked: tick boom"), out.String())
	assert.Contains(t, out.String(), "timer_test.go", "with the panic's stack")
}

func TestPanicWithWorkers(t *testing.T) {
	tm, err := New(WithWorkers(2))
	require.NoError(t, err)
	done := make(chan struct{})
	_, err = tm.AfterFunc(time.Millisecond, func() { panic("boom") })
	require.NoError(t, err)
	_, err = tm.AfterFunc(2*time.Millisecond, func() { close(done) })
	require.NoError(t, err)
	<-done
	tm.Close()
	assert.Equal(t, int64(1), tm.Stats().Panics)
}

func TestClose(t *testing.T) {
	tm, clk := newManual(t, 0)
	var recs []*recorder
	for _, d := range []time.Duration{3 * time.Second, time.Second, time.Hour, 2 * time.Second} {
		r := newRecorder(clk)
		require.NoError(t, tm.Schedule(&r.Task, d))
		recs = append(recs, r)
	}
	pending := tm.Close()
	require.Len(t, pending, 4, "every pending task is returned")
	for i, want := range []*recorder{recs[1], recs[3], recs[0], recs[2]} {
		assert.Same(t, &want.Task, pending[i], "in deadline order")
	}
	assert.Nil(t, tm.Close(), "idempotent")
	assert.Equal(t, 0, tm.Size())
	assert.ErrorIs(t, tm.Schedule(&recs[0].Task, time.Second), ErrClosed)
	clk.Advance(2 * time.Hour)
	for _, r := range recs {
		assert.Empty(t, r.ran(), "pending tasks never run after Close")
	}
}

func TestCloseRunsExpiredTasks(t *testing.T) {
	// With workers, tasks already handed over run before Close returns.
	tm, err := New(WithWorkers(1))
	require.NoError(t, err)
	block := make(chan struct{})
	var ran atomic.Int32
	_, err = tm.AfterFunc(0, func() { <-block })
	require.NoError(t, err)
	for range 100 {
		_, err = tm.AfterFunc(0, func() { ran.Add(1) })
		require.NoError(t, err)
	}
	closed := make(chan struct{})
	go func() { tm.Close(); close(closed) }()
	close(block)
	<-closed
	assert.Equal(t, int32(100), ran.Load())
}

func TestAdvanceClockReports(t *testing.T) { synctest.Test(t, testAdvanceClockReports) }

func testAdvanceClockReports(t *testing.T) {
	clk := NewManualClock(0)
	tm, err := New(WithClock(clk))
	require.NoError(t, err)
	defer tm.Close()
	ctx := t.Context()
	rec := newRecorder(clk)
	require.NoError(t, tm.Schedule(&rec.Task, 5*time.Millisecond))

	done := make(chan bool)
	go func() { done <- tm.AdvanceClock(ctx, time.Second) }()
	synctest.Wait() // the waiter is asleep on its alarm
	// The waiter sleeps on a manual alarm; moving the clock past the bucket
	// wakes it. Advance flushes the bucket itself, so the waiter finds nothing.
	clk.Advance(time.Second)
	assert.False(t, <-done)
	assert.Len(t, rec.ran(), 1)

	// A bucket due and not yet flushed is flushed by AdvanceClock.
	tm2, err := New(WithClock(NewManualClock(0)))
	require.NoError(t, err)
	defer tm2.Close()
	rec2 := newRecorder(clk)
	require.NoError(t, tm2.Schedule(&rec2.Task, time.Millisecond))
	tm2.manual.set(time.Millisecond) // move time without flushing
	assert.True(t, tm2.AdvanceClock(ctx, 0))
	assert.Len(t, rec2.ran(), 1)
	assert.False(t, tm2.AdvanceClock(ctx, 0), "nothing left")
}

func TestAdvanceClockStops(t *testing.T) {
	tm, err := New(WithAutoAdvance(false))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan bool)
	go func() { done <- tm.AdvanceClock(ctx, time.Hour) }()
	cancel()
	assert.False(t, <-done, "a cancelled context ends the wait")

	go func() { done <- tm.AdvanceClock(t.Context(), time.Hour) }()
	tm.Close()
	assert.False(t, <-done, "Close ends the wait")
}

func TestInvalidConfig(t *testing.T) {
	for _, o := range []Option{WithTick(0), WithWheelSize(1), WithMaxPending(-1)} {
		_, err := New(o)
		assert.True(t, errors.Is(err, ErrInvalidConfig), "%v", err)
	}
}
