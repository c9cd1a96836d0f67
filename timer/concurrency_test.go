package timer

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countTask counts its runs.
type countTask struct {
	Task
	runs      atomic.Int32
	cancelled bool // set by the goroutine that owns the task
}

func (c *countTask) Run() { c.runs.Add(1) }

// churn has g goroutines schedule n tasks each with delays across several
// levels and cancel about half of them at random moments, while advance moves
// the clock. Afterwards every task has either run exactly once or had its
// Cancel report true; never both, never neither.
func churn(t *testing.T, tm *Timer, g, n int, advance func(stop <-chan struct{}), drain func()) {
	t.Helper()
	tasks := make([][]*countTask, g)
	stop := make(chan struct{})
	advDone := make(chan struct{})
	go func() { defer close(advDone); advance(stop) }()

	var wg sync.WaitGroup
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			mine := make([]*countTask, n)
			for i := range mine {
				c := &countTask{}
				c.Init(c)
				mine[i] = c
				// 0 to 30ms: due at once, and in levels 1 to 3.
				if err := tm.Schedule(&c.Task, time.Duration(rng.Int64N(int64(30*time.Millisecond)))); err != nil {
					t.Error(err)
					return
				}
				if i > 0 && rng.IntN(2) == 0 {
					j := rng.IntN(i + 1)
					if !mine[j].cancelled {
						mine[j].cancelled = tm.Cancel(&mine[j].Task)
					}
				}
			}
			tasks[w] = mine
		}()
	}
	wg.Wait()
	close(stop)
	<-advDone
	drain()

	var ran, cancelled int
	for _, mine := range tasks {
		for _, c := range mine {
			runs := c.runs.Load()
			switch {
			case c.cancelled && runs != 0:
				t.Fatalf("a task was cancelled and ran %d times", runs)
			case !c.cancelled && runs != 1:
				t.Fatalf("a task that was not cancelled ran %d times", runs)
			}
			if c.cancelled {
				cancelled++
			} else {
				ran++
			}
		}
	}
	assert.Equal(t, 0, tm.Size())
	t.Logf("%d ran, %d stopped", ran, cancelled)
	assert.Positive(t, ran)
	assert.Positive(t, cancelled)
	require.NoError(t, tm.check())
}

func TestConcurrentScheduleCancelManualClock(t *testing.T) {
	tm, clk := newManual(t, 0)
	churn(t, tm, 8, 5000,
		func(stop <-chan struct{}) {
			for {
				select {
				case <-stop:
					return
				default:
					clk.Advance(50 * time.Microsecond)
				}
			}
		},
		func() { clk.Advance(time.Minute) })
}

func TestConcurrentScheduleCancelRealClock(t *testing.T) {
	// The real clock, workers and the auto-advance goroutine: flushes overlap
	// cancels for real. Close drains it; the tasks it returns never ran, and
	// count as stopped.
	tm, err := New(WithTick(100*time.Microsecond), WithWorkers(3))
	require.NoError(t, err)
	t.Cleanup(func() { tm.Close() })
	churn(t, tm, 8, 4000,
		func(<-chan struct{}) {},
		func() {
			for _, task := range tm.Close() {
				task.r.(*countTask).cancelled = true
			}
		})
}

func TestIdleCostsNoWakeups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := New()
		require.NoError(t, err)
		defer tm.Close()
		time.Sleep(24 * time.Hour)
		assert.Zero(t, tm.Stats().Wakeups, "nothing pending: the clock never wakes")
	})
}

func TestMillionTasksInAnHourWakeOncePerLevel(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	synctest.Test(t, func(t *testing.T) {
		tm, err := New()
		require.NoError(t, err)
		defer tm.Close()
		var ran atomic.Int64
		tasks := make([]Task, n)
		for i := range tasks {
			tasks[i].Init(Func(func() { ran.Add(1) }))
			require.NoError(t, tm.Schedule(&tasks[i], time.Hour))
		}
		levels := tm.Stats().Levels
		time.Sleep(time.Hour - time.Millisecond)
		assert.Zero(t, ran.Load(), "none early")
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int64(n), ran.Load())
		// One flush per level on the way down in each shard, not one per
		// tick (3.6 million); the shards' buckets share their expiries, so
		// the wake-ups are not multiplied by the shards. They add the two
		// the scheduling burst causes (the first bucket, then the same
		// bucket becoming crowded).
		st := tm.Stats()
		assert.LessOrEqual(t, st.Flushed, int64((levels+1)*st.Shards), "flushes for %d levels in %d shards", levels, st.Shards)
		assert.LessOrEqual(t, st.Wakeups, int64(2*levels), "wake-ups for %d levels", levels)
		t.Logf("%d tasks, %d levels: %d wake-ups, %d buckets flushed", n, levels, st.Wakeups, st.Flushed)
	})
}
