package timer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestPeriodicSchedules(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fixedRate bool
		runFor    time.Duration // how long each run makes the clock go on (a slow run)
		want      []time.Duration
	}{
		{"fixed rate", true, 0, []time.Duration{1, 4, 7, 10}},
		{"fixed delay", false, 0, []time.Duration{1, 4, 7, 10}},
		// A fixed rate does not drift when runs are slow; a fixed delay
		// counts from each run's end. The runs here take 1s of the clock
		// (a task's own schedule of the clock, not a sleep).
		{"fixed rate, slow runs", true, time.Second, []time.Duration{1, 4, 7, 10}},
		{"fixed delay, slow runs", false, time.Second, []time.Duration{1, 5, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm, clk := newManual(t, 0)
			var runs []time.Duration
			var p *Periodic
			f := func() {
				runs = append(runs, clk.Now()/time.Second)
				if tc.runFor > 0 {
					// The run ends runFor later: move the clock the task
					// reads, as a run that long would see it.
					clk.now.Add(int64(tc.runFor))
				}
			}
			var err error
			if tc.fixedRate {
				p, err = tm.ScheduleAtFixedRate(time.Second, 3*time.Second, f)
			} else {
				p, err = tm.ScheduleWithFixedDelay(time.Second, 3*time.Second, f)
			}
			require.NoError(t, err)
			clk.Advance(10*time.Second - clk.Now())
			assert.Equal(t, tc.want, runs)
			assert.True(t, p.Stop(), "the next run was pending")
			clk.Advance(10 * time.Second)
			assert.Len(t, runs, len(tc.want), "no run after Stop")
			assert.False(t, p.Stop(), "nothing left to stop")
			assert.NoError(t, p.Err(), "stopped, not ended by itself")
		})
	}
}

func TestPeriodicFixedRateCatchesUp(t *testing.T) {
	tm, clk := newManual(t, 0)
	var runs []time.Duration
	var stall bool
	_, err := tm.ScheduleAtFixedRate(0, time.Second, func() {
		runs = append(runs, clk.Now())
		if !stall {
			stall = true
			clk.now.Add(int64(3500 * time.Millisecond)) // the first run takes 3.5s
		}
	})
	require.NoError(t, err)
	clk.Advance(0)
	// Runs 1, 2 and 3 were missed during the stall: they follow at once.
	assert.Equal(t, []time.Duration{0, 3500 * time.Millisecond, 3500 * time.Millisecond, 3500 * time.Millisecond}, runs)
	clk.Advance(time.Second)
	assert.Len(t, runs, 5, "then back on the grid: the run due at 4s")
}

func TestPeriodicPanicEndsTheScheduleLoudly(t *testing.T) {
	core, logs := observer.New(zapcore.ErrorLevel)
	tm, clk := newManual(t, 0, WithLogger(zap.New(core)))
	runs := 0
	p, err := tm.ScheduleWithFixedDelay(time.Second, time.Second, func() {
		runs++
		if runs == 2 {
			panic("boom")
		}
	})
	require.NoError(t, err)
	clk.Advance(5 * time.Second)
	assert.Equal(t, 2, runs, "no run after the panic")
	assert.ErrorIs(t, p.Err(), ErrPanicked)
	assert.ErrorContains(t, p.Err(), "boom")
	assert.Equal(t, int64(1), tm.Stats().Panics, "counted")
	require.Equal(t, 1, logs.Len(), "logged")
	assert.Contains(t, logs.All()[0].Message, "periodic task panicked")
	assert.False(t, p.Stop())
	assert.Zero(t, tm.Size(), "nothing left on the timer")
}

func TestPeriodicEndsWhenItsTimerCloses(t *testing.T) {
	tm, clk := newManual(t, 0)
	var p *Periodic
	p, err := tm.ScheduleAtFixedRate(time.Second, time.Second, func() { tm.Close() })
	require.NoError(t, err)
	clk.Advance(time.Second)
	assert.ErrorIs(t, p.Err(), ErrClosed, "the run closed the timer: the next one cannot be scheduled")
}

func TestPeriodicRefusesABadPeriod(t *testing.T) {
	tm, _ := newManual(t, 0)
	for _, period := range []time.Duration{0, -time.Second} {
		p, err := tm.ScheduleAtFixedRate(0, period, func() {})
		assert.ErrorIs(t, err, ErrInvalidConfig, "period %v", period)
		assert.Nil(t, p)
		p, err = tm.ScheduleWithFixedDelay(0, period, func() {})
		assert.ErrorIs(t, err, ErrInvalidConfig, "period %v", period)
		assert.Nil(t, p)
	}
}

func TestPeriodicOnAClosedTimer(t *testing.T) {
	tm, _ := newManual(t, 0)
	tm.Close()
	_, err := tm.ScheduleAtFixedRate(time.Second, time.Second, func() {})
	assert.ErrorIs(t, err, ErrClosed)
}

func TestMaxPendingErrorSaysTheCap(t *testing.T) {
	tm, _ := newManual(t, 0, WithMaxPending(2))
	for range 2 {
		require.NoError(t, tm.Schedule(NewTask(Func(func() {})), time.Second))
	}
	err := tm.Schedule(NewTask(Func(func() {})), time.Second)
	assert.ErrorIs(t, err, ErrFull)
	assert.ErrorContains(t, err, "2 pending is the cap")
}
