package timer

import (
	"runtime"
	"sync"
	"sync/atomic"
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

// A run the timer has taken off its wheel, queued behind another task for
// the one worker, has not started: Stop ends the schedule there and then,
// reports it, and the run never starts. (Stop used to cancel only a run
// still on the wheel, report false for this one, and let it run after it
// returned: a watchdog renewing a lease after its lock was released.)
func TestPeriodicStopStopsAQueuedRun(t *testing.T) {
	tm, clk := newManual(t, 0, WithWorkers(1), WithShards(1))
	running, release := make(chan struct{}), make(chan struct{})
	require.NoError(t, tm.Schedule(NewTask(Func(func() {
		close(running)
		<-release
	})), time.Second))
	var runs atomic.Int32
	p, err := tm.ScheduleWithFixedDelay(time.Second, time.Second, func() { runs.Add(1) })
	require.NoError(t, err)
	clk.Advance(time.Second) // both due: the blocker holds the worker, the run waits
	<-running

	assert.True(t, p.Stop(), "Stop ended a schedule whose run was queued")
	close(release)
	tm.Close() // the worker runs what was queued before it exits
	assert.Zero(t, runs.Load(), "no run starts after Stop returned")
	assert.False(t, p.Stop(), "already ended")
	assert.NoError(t, p.Err())
}

// StopAndWait waits for a run in progress, and no run follows it; Stop
// called from the run itself ends the schedule without waiting.
func TestPeriodicStopAndWaitWaitsForTheRunInProgress(t *testing.T) {
	tm, clk := newManual(t, 0, WithWorkers(1))
	inRun, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	p, err := tm.ScheduleWithFixedDelay(time.Second, time.Second, func() {
		if runs.Add(1) == 1 {
			close(inRun)
			<-release
		}
	})
	require.NoError(t, err)
	clk.Advance(time.Second)
	<-inRun

	stopped := make(chan bool)
	go func() { stopped <- p.StopAndWait() }()
	select {
	case <-stopped:
		t.Fatal("StopAndWait returned while the run was in progress")
	case <-time.After(20 * time.Millisecond): // only a wrong answer comes back; the verdict is below
	}
	close(release)
	assert.True(t, <-stopped, "StopAndWait ended the schedule")
	clk.Advance(10 * time.Second)
	tm.Close()
	assert.Equal(t, int32(1), runs.Load(), "no run after StopAndWait")

	tm2, clk2 := newManual(t, 0)
	var p2 *Periodic
	var runs2 int
	p2, err = tm2.ScheduleAtFixedRate(time.Second, time.Second, func() {
		runs2++
		assert.True(t, p2.Stop(), "Stop from the run ends its schedule")
	})
	require.NoError(t, err)
	clk2.Advance(5 * time.Second)
	assert.Equal(t, 1, runs2)
}

// Stop and StopAndWait racing the timer's workers on the real clock: 2,000
// schedules renewing every millisecond, each stopped by StopAndWait while
// it runs; a run that starts after StopAndWait returned is counted. (Before
// the fix, a renewal ran after Stop had returned.)
func TestPeriodicNoRunAfterStopAndWait(t *testing.T) {
	tm, err := New(WithWorkers(2))
	require.NoError(t, err)
	defer tm.Close()
	const n = 2000
	var late atomic.Int32
	stopped := make([]atomic.Bool, n)
	started := make([]atomic.Int32, n)
	periodics := make([]*Periodic, n)
	for i := range n {
		periodics[i], err = tm.ScheduleWithFixedDelay(0, time.Millisecond, func() {
			if stopped[i].Load() {
				late.Add(1)
			}
			started[i].Add(1)
		})
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for _, half := range [][2]int{{0, n / 2}, {n / 2, n}} {
		wg.Go(func() {
			for i := half[0]; i < half[1]; i++ {
				for started[i].Load() < 2 {
					runtime.Gosched() // let it run a couple of times first
				}
				assert.True(t, periodics[i].StopAndWait())
				stopped[i].Store(true)
			}
		})
	}
	wg.Wait()
	tm.Close() // lets any run already handed to a worker go (it must find its schedule ended)
	assert.Zero(t, late.Load(), "runs started after StopAndWait returned")
}
