package purgatory

import (
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/timer"
)

// TestEveryOperationCompletes is Kafka's testLockInTryCompleteElseWatch
// family: 100 operations, each completable only on its 20th check, checked by
// 20 goroutines at random moments. Every one completes, exactly once.
func TestEveryOperationCompletes(t *testing.T) {
	p, clk := newTestPurgatory(t)
	const n, g = 100, 20
	ops := make([]*mockOp, n)
	for i := range ops {
		op := newMockOp()
		op.onTry = func(tries int32) {
			if tries >= 20 {
				op.completable.Store(true)
			}
		}
		ops[i] = op
		submit(t, p, op, time.Hour, strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for left := n; left > 0; {
				left = 0
				for _, i := range rng.Perm(n) {
					if !ops[i].IsCompleted() {
						left++
						p.CheckAndComplete(strconv.Itoa(i))
					}
				}
			}
		}()
	}
	wg.Wait()
	for i, op := range ops {
		assert.Equal(t, int32(1), op.completions.Load(), "operation %d", i)
		assert.Equal(t, operation.Completed, op.Outcome())
	}
	assert.Equal(t, 0, p.Delayed())
	maybePurge(p)      // the round that sees the checks' garbage
	quietRound(p, clk) // a quiet round: the load has ended
	assert.Equal(t, 0, p.Watched(), "after a quiet round, nothing is left listed")
}

// TestNoLostWakeup races the event that makes an operation completable (and
// its CheckAndComplete) against the operation's submission, many times. The
// event always sets the condition before checking; whichever order the two
// goroutines run in, the operation must complete without waiting for its
// deadline.
func TestNoLostWakeup(t *testing.T) {
	p, _ := newTestPurgatory(t)
	rounds := 20000
	if testing.Short() {
		rounds = 2000
	}
	for i := range rounds {
		op := newMockOp()
		k := strconv.Itoa(i % 64)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			_, err := p.TryCompleteElseWatch(op, time.Hour, k)
			assert.NoError(t, err)
		}()
		go func() {
			defer wg.Done()
			<-start
			op.completable.Store(true) // the event...
			p.CheckAndComplete(k)      // ...then its notification
		}()
		close(start)
		wg.Wait()
		require.Equal(t, int32(1), op.completions.Load(), "round %d: the event was missed", i)
	}
	assert.Equal(t, 0, p.Delayed())
}

// TestNoLostWakeupBetweenChecks races checks against each other: each of
// four goroutines makes one part of an operation's condition true and then
// checks its key. A check that finds the operation being tried by another
// leaves it to that try, which must try again; the operation completes once
// the last part is there, without waiting for a further check.
func TestNoLostWakeupBetweenChecks(t *testing.T) {
	p, _ := newTestPurgatory(t)
	rounds := 5000
	if testing.Short() {
		rounds = 500
	}
	const parts = 4
	for i := range rounds {
		var have atomic.Int32
		op := newMockOp()
		op.onTry = func(int32) { op.completable.Store(have.Load() == parts) }
		k := strconv.Itoa(i % 64)
		submit(t, p, op, time.Hour, k)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range parts {
			wg.Go(func() {
				<-start
				have.Add(1)           // the event...
				p.CheckAndComplete(k) // ...then its notification
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, int32(1), op.completions.Load(), "round %d: an event was missed", i)
	}
}

// TestExactlyOnce submits operations while other goroutines complete them by
// key, force them, cancel their keys and let them expire, concurrently. Every
// operation is answered exactly once. PURGATORY_STRESS_OPS sets the count
// (make stress runs one million).
func TestExactlyOnce(t *testing.T) {
	t.Run("own-timer", func(t *testing.T) { exactlyOnce(t, false) })
	t.Run("shared-timer", func(t *testing.T) { exactlyOnce(t, true) })
}

func exactlyOnce(t *testing.T, shared bool) {
	n := 50_000
	if testing.Short() {
		n = 5_000
	}
	if s := os.Getenv("PURGATORY_STRESS_OPS"); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(t, err)
		n = v
	}
	clk := timer.NewManualClock(0)
	opts := []Option{WithClock(clk)}
	if shared {
		tm, err := timer.New(timer.WithClock(clk))
		require.NoError(t, err)
		defer tm.Close()
		opts = []Option{WithTimer(tm)}
	}
	p, err := New[int](t.Name(), append(opts, WithReaper(false), WithPurgeInterval(1000))...)
	require.NoError(t, err)

	const keys = 512
	ops := make([]*countOp, n)
	for i := range ops {
		ops[i] = &countOp{}
	}
	var submitted atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Submitters.
	const submitters = 4
	var subWG sync.WaitGroup
	for s := range submitters {
		subWG.Add(1)
		go func() {
			defer subWG.Done()
			rng := rand.New(rand.NewPCG(uint64(s), 2))
			for i := s; i < n; i += submitters {
				op := ops[i]
				op.ready.Store(rng.IntN(8) == 0) // some complete at once
				ks := []int{rng.IntN(keys), rng.IntN(keys)}
				timeout := time.Duration(1+rng.IntN(50)) * time.Millisecond
				if _, err := p.TryCompleteElseWatch(op, timeout, ks...); err != nil {
					t.Error(err)
					return
				}
				submitted.Add(1)
			}
		}()
	}
	// Completers by key, forcers, cancellers, the clock and the purger.
	worker := func(f func(rng *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
			for {
				select {
				case <-stop:
					return
				default:
					f(rng)
				}
			}
		}()
	}
	for range 2 {
		worker(func(rng *rand.Rand) {
			if m := submitted.Load(); m > 0 {
				ops[rng.Int64N(m)].ready.Store(true)
			}
			p.CheckAndComplete(rng.IntN(keys))
		})
	}
	worker(func(rng *rand.Rand) {
		if m := submitted.Load(); m > 0 {
			ops[rng.Int64N(m)].ForceComplete()
		}
	})
	worker(func(rng *rand.Rand) {
		for _, op := range p.CancelForKey(rng.IntN(keys)) {
			op.OperationState().ForceComplete()
		}
	})
	worker(func(*rand.Rand) { clk.Advance(time.Millisecond) })
	worker(func(*rand.Rand) { maybePurge(p) })

	subWG.Wait()
	close(stop)
	wg.Wait()
	clk.Advance(time.Second) // the rest expire
	waiting := 0
	for _, op := range ops {
		if !op.IsCompleted() {
			waiting++ // handed back by CancelForKey and not answered
		}
	}
	assert.Equal(t, waiting, p.Pending(), "Pending counts the operations not answered, each once")
	require.NoError(t, p.Close())

	var byOutcome [operation.Closed + 1]int
	for i, op := range ops {
		require.Equal(t, int32(1), op.completions.Load(), "operation %d answered %d times", i, op.completions.Load())
		byOutcome[op.Outcome()]++
	}
	t.Logf("%d operations: %d completed, %d expired, %d forced, %d cancelled, %d closed", n,
		byOutcome[operation.Completed], byOutcome[operation.Expired], byOutcome[operation.Forced],
		byOutcome[operation.Cancelled], byOutcome[operation.Closed])
	assert.Zero(t, byOutcome[operation.Pending])
	assert.Equal(t, 0, p.Pending())
	assert.Equal(t, 0, p.Delayed())
	assert.Equal(t, 0, p.Watched())
}

// countOp counts its completions; it is ready when its event happened.
type countOp struct {
	operation.State
	ready       atomic.Bool
	completions atomic.Int32
	expirations atomic.Int32
}

func (c *countOp) TryComplete() bool { return c.ready.Load() }
func (c *countOp) OnComplete()       { c.completions.Add(1) }
func (c *countOp) OnExpiration() {
	if c.expirations.Add(1) > 1 || c.Outcome() != operation.Expired {
		panic("OnExpiration ran twice, or for an operation that did not expire")
	}
}
