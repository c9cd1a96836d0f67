package purgatory

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/timer"
)

// The rule for errors: an error means the operation was not taken and its
// OnComplete never runs because of the call; no error means the purgatory
// answers it exactly once.
func TestAnErrorMeansUntouched(t *testing.T) {
	p, clk := newTestPurgatory(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	submitted := newMockOp()
	submit(t, p, submitted, time.Minute, "k")
	for _, tc := range []struct {
		name   string
		submit func(op *mockOp) (bool, error)
		want   error
	}{
		{"no keys", func(op *mockOp) (bool, error) { return p.TryCompleteElseWatch(op, time.Second) }, ErrNoKeys},
		{"context done", func(op *mockOp) (bool, error) {
			return p.TryCompleteElseWatchContext(cancelled, op, time.Second, "k")
		}, context.Canceled},
		{"closed", func(op *mockOp) (bool, error) {
			closed, _ := newTestPurgatory(t)
			require.NoError(t, closed.Close())
			return closed.TryCompleteElseWatch(op, time.Second, "k")
		}, ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := newMockOp()
			op.completable.Store(true) // it would complete at once if tried
			done, err := tc.submit(op)
			assert.ErrorIs(t, err, tc.want)
			assert.False(t, done)
			assert.Zero(t, op.tries.Load(), "never tried")
			assert.Zero(t, op.completions.Load(), "never answered")
			assert.Equal(t, operation.Pending, op.Outcome())
		})
	}
	done, err := p.TryCompleteElseWatch(submitted, time.Second, "k")
	assert.ErrorIs(t, err, ErrSubmitted)
	assert.False(t, done)
	clk.Advance(time.Second)
	assert.Equal(t, operation.Pending, submitted.Outcome(), "the second submission left its deadline alone")
}

// Close racing a submission (here, from inside its second try, after the
// watch and before the deadline): the operation is answered as Closed, and
// the call reports it answered, with no error.
func TestCloseRacingSubmissionAnswersWithoutError(t *testing.T) {
	p, _ := newTestPurgatory(t)
	op := newMockOp()
	op.onTry = func(n int32) {
		if n == 2 {
			require.NoError(t, p.Close())
		}
	}
	done, err := p.TryCompleteElseWatch(op, time.Second, "k")
	require.NoError(t, err)
	assert.False(t, done, "Close answered it, on its own goroutine")
	assert.Equal(t, operation.Closed, op.Outcome())
	assert.Equal(t, int32(1), op.completions.Load())
}

func TestTimerAtItsCapRejects(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p, _ := newTestPurgatory(t, WithTimerOptions(timer.WithMaxPending(1)), WithRegisterer(reg))
	submit(t, p, newMockOp(), time.Minute, "a")
	op := newMockOp()
	done, err := p.TryCompleteElseWatch(op, time.Minute, "b")
	require.NoError(t, err, "answered, not refused")
	assert.True(t, done)
	assert.Equal(t, operation.Rejected, op.Outcome())
	assert.Equal(t, 1.0, testutil.ToFloat64(p.obs.m.completions[operation.Rejected]), "counted as rejected")
	assert.Zero(t, testutil.ToFloat64(p.obs.m.completions[operation.Closed]), "not as closed")
	assert.Equal(t, 1, p.Delayed())
}

// CancelForKey racing a submission, after the watch and before the
// deadline: the operation it hands back must never expire, or its caller,
// who answers it, would answer it twice.
func TestCancelForKeyRacingSubmission(t *testing.T) {
	p, clk := newTestPurgatory(t)
	op := newMockOp()
	var cancelled []operation.Operation
	op.onTry = func(n int32) {
		if n == 2 {
			cancelled = p.CancelForKey("k")
		}
	}
	submit(t, p, op, time.Second, "k")
	require.Equal(t, []operation.Operation{op}, cancelled)
	assert.Zero(t, p.Delayed(), "not on the timer")
	clk.Advance(2 * time.Second)
	assert.Equal(t, operation.Pending, op.Outcome(), "a cancelled operation never expires")
	assert.True(t, op.ForceComplete())
	assert.Equal(t, operation.Cancelled, op.Outcome())
}

// The same race, left to the scheduler: 20,000 submissions and concurrent
// cancellations of their keys. Before the fix, hundreds of the operations
// handed to the canceller then expired. With workers, the clock moves
// meanwhile too, so that cancellations also race expiries the timer has
// taken off its wheel (about 1 in 100 expired before that fix).
func TestCancelForKeyRacingSubmissionConcurrently(t *testing.T) {
	for _, cfg := range []struct {
		shared, workers bool
	}{{false, false}, {true, false}, {false, true}} {
		shared := cfg.shared
		clk := timer.NewManualClock(0)
		opts := []Option{WithClock(clk), WithReaper(false)}
		if shared {
			tm, err := timer.New(timer.WithClock(clk))
			require.NoError(t, err)
			defer tm.Close()
			opts = []Option{WithTimer(tm), WithReaper(false)}
		}
		if cfg.workers {
			opts = append(opts, WithTimerOptions(timer.WithWorkers(2)))
		}
		p, err := New[int](t.Name(), opts...)
		require.NoError(t, err)
		const n, keys = 20_000, 16
		ops := make([]*mockOp, n)
		handed := make([]atomic.Bool, n)
		index := make(map[*mockOp]int, n)
		for i := range ops {
			ops[i] = newMockOp()
			index[ops[i]] = i
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(1, 2))
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, op := range p.CancelForKey(rng.IntN(keys)) {
					handed[index[op.(*mockOp)]].Store(true)
				}
			}
		})
		if cfg.workers {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					clk.Advance(time.Millisecond)
				}
			})
		}
		for i, op := range ops {
			_, err := p.TryCompleteElseWatch(op, time.Millisecond, i%keys)
			require.NoError(t, err)
		}
		close(stop)
		wg.Wait()
		clk.Advance(time.Second)
		require.NoError(t, p.Close()) // the workers have run every expiry handed to them
		expired, cancelledOps := 0, 0
		for i, op := range ops {
			if !handed[i].Load() {
				continue
			}
			cancelledOps++
			if op.Outcome() == operation.Expired {
				expired++
			}
			op.ForceComplete()
		}
		assert.Zero(t, expired, "%+v: of %d operations handed to CancelForKey's caller, none may expire", cfg, cancelledOps)
		for _, op := range ops {
			require.Equal(t, int32(1), op.completions.Load(), "answered once")
		}
		assert.Zero(t, p.Delayed(), "%+v", cfg)
	}
}

func TestNoTimeoutWatchesWithoutADeadline(t *testing.T) {
	p, clk := newTestPurgatory(t)
	op := newMockOp()
	submit(t, p, op, NoTimeout, "k")
	assert.Zero(t, p.Delayed(), "nothing on the timer")
	assert.Equal(t, 1, p.Watched())
	clk.Advance(100 * 365 * 24 * time.Hour)
	assert.Equal(t, operation.Pending, op.Outcome(), "never expires")
	op.completable.Store(true)
	assert.Equal(t, 1, p.CheckAndComplete("k"))
	assert.Equal(t, operation.Completed, op.Outcome())

	waiting := newMockOp()
	submit(t, p, waiting, NoTimeout, "k")
	require.NoError(t, p.Close())
	assert.Equal(t, operation.Closed, waiting.Outcome(), "Close answers it too")
}

// An operation that defines no OnExpiration gets State's, which does
// nothing; one that defines it has it run on expiration.
type quietOp struct {
	operation.State
	completed int
}

func (q *quietOp) TryComplete() bool { return false }
func (q *quietOp) OnComplete()       { q.completed++ }

func TestOnExpirationIsOptional(t *testing.T) {
	p, clk := newTestPurgatory(t)
	op := &quietOp{}
	_, err := p.TryCompleteElseWatch(op, time.Second, "k")
	require.NoError(t, err)
	clk.Advance(time.Second)
	assert.Equal(t, operation.Expired, op.Outcome())
	assert.Equal(t, 1, op.completed)
}

func TestContextCancelsTheOperation(t *testing.T) {
	p, clk := newTestPurgatory(t)
	conn, disconnect := context.WithCancel(context.Background())
	ops := make([]*mockOp, 5)
	for i := range ops {
		ops[i] = newMockOp()
		_, err := p.TryCompleteElseWatchContext(conn, ops[i], time.Minute, "k")
		require.NoError(t, err)
	}
	ops[0].completable.Store(true)
	require.Equal(t, 1, p.CheckAndComplete("k"))
	disconnect() // the client went away
	for _, op := range ops[1:] {
		require.NoError(t, op.Wait(context.Background()))
		assert.Equal(t, operation.ContextDone, op.Outcome(), "a distinct outcome")
		assert.Zero(t, op.expirations.Load())
	}
	assert.Equal(t, operation.Completed, ops[0].Outcome())
	assert.Zero(t, p.Delayed(), "nothing left on the timer")
	clk.Advance(time.Hour)
}

func TestContextDeadlineIsTheDeadline(t *testing.T) {
	p, _ := newTestPurgatory(t, WithClock(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	op := newMockOp()
	var answered time.Time
	op.onComplete = func() { answered = time.Now() }
	_, err := p.TryCompleteElseWatchContext(ctx, op, time.Hour, "k")
	require.NoError(t, err)
	require.NoError(t, op.Wait(context.Background()))
	assert.Equal(t, operation.Expired, op.Outcome(), "the context's deadline, earlier than the timeout, expired it")
	assert.Equal(t, int32(1), op.expirations.Load())
	// Measured from ctx's own deadline: a clock read after WithTimeout
	// would be late by however long this goroutine was descheduled.
	assert.False(t, answered.Before(deadline), "never early: answered %v before the deadline", deadline.Sub(answered))
}

func TestSubmissionAllocatesOnlyTheOperation(t *testing.T) {
	p, _ := newTestPurgatory(t)
	for _, tc := range []struct {
		name   string
		submit func(op *quietOp)
	}{
		{"one key", func(op *quietOp) { _, _ = p.TryCompleteElseWatch(op, time.Minute, "k") }},
		{"no timeout", func(op *quietOp) { _, _ = p.TryCompleteElseWatch(op, NoTimeout, "k") }},
		{"a context that is never done", func(op *quietOp) {
			_, _ = p.TryCompleteElseWatchContext(context.Background(), op, time.Minute, "k")
		}},
	} {
		p.CheckAndComplete("k") // the key's list exists, with room
		allocs := testing.AllocsPerRun(100, func() {
			op := &quietOp{}
			tc.submit(op)
			op.ForceComplete()
		})
		assert.Equal(t, 1.0, allocs, "%s: only the operation itself", tc.name)
	}
}

func TestDoneWaitsForTheAnswer(t *testing.T) {
	p, _ := newTestPurgatory(t)
	op := newMockOp()
	answered := false
	op.onComplete = func() { answered = true }
	submit(t, p, op, time.Minute, "k")
	go func() {
		op.completable.Store(true)
		p.CheckAndComplete("k")
	}()
	<-op.Done()
	assert.True(t, answered, "Done is closed once OnComplete has run")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, op.Wait(ctx), "done already: Wait returns nil whatever ctx")
	assert.True(t, errors.Is(newMockOp().Wait(ctx), context.Canceled), "an operation never submitted waits for ctx")
}

// CancelForKey racing the timer itself: the deadline has passed and the
// timer has taken the operation's task off its bucket, to run on a worker,
// when CancelForKey hands the operation to its caller. Cancelling the task
// then finds nothing to unlink; the expiry that runs later must still leave
// the operation to the caller, who answers it as Cancelled.
func TestCancelForKeyAfterTheTimerTookTheTask(t *testing.T) {
	clk := timer.NewManualClock(0)
	p, err := New[string](t.Name(), WithClock(clk), WithReaper(false),
		WithTimerOptions(timer.WithWorkers(1), timer.WithShards(1)))
	require.NoError(t, err)
	defer p.Close()

	// The first operation due holds the only worker, so that the second,
	// due at the same tick, waits in the worker's queue: off the wheel,
	// not yet run.
	running, release := make(chan struct{}), make(chan struct{})
	blocker := newMockOp()
	blocker.onComplete = func() {
		close(running)
		<-release
	}
	submit(t, p, blocker, time.Millisecond, "blocker")
	op := newMockOp()
	submit(t, p, op, time.Millisecond, "k")
	clk.Advance(time.Millisecond)
	<-running

	assert.Equal(t, []operation.Operation{op}, p.CancelForKey("k"))
	close(release)
	require.NoError(t, p.Close()) // waits for the worker to run the queued expiry
	assert.False(t, op.IsCompleted(), "the expiry found the operation cancelled")
	assert.Zero(t, op.expirations.Load(), "OnExpiration never runs for it")
	assert.True(t, op.ForceComplete(), "its caller answers it")
	assert.Equal(t, operation.Cancelled, op.Outcome())
	assert.Equal(t, int32(1), op.completions.Load())
}
