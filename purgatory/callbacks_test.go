package purgatory

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gopurgatory/purgatory/internal/panics"
	"github.com/gopurgatory/purgatory/internal/testwait"
	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/reaper"
	"github.com/gopurgatory/purgatory/timer"
)

// TestSharedLockCompletionChecksSibling: two operations share one lock (as
// Kafka's group operations do). Completing the first checks the second's key
// from OnComplete; with Go's non-reentrant mutex this only works because
// OnComplete runs with the lock released.
func TestSharedLockCompletionChecksSibling(t *testing.T) {
	p, _ := newTestPurgatory(t)
	var group sync.Mutex
	a, b := newMockOp(), newMockOp()
	a.ShareLock(&group)
	b.ShareLock(&group)
	a.onComplete = func() {
		assert.True(t, group.TryLock(), "OnComplete runs with the shared lock released")
		group.Unlock()
		b.completable.Store(true)
		assert.Equal(t, 1, p.CheckAndComplete("b"), "the sibling completes from inside OnComplete")
	}
	submit(t, p, a, time.Minute, "a")
	submit(t, p, b, time.Minute, "b")

	a.completable.Store(true)
	done := make(chan int)
	go func() { done <- p.CheckAndComplete("a") }()
	select {
	case n := <-done:
		assert.Equal(t, 1, n)
	case <-time.After(30 * time.Second): // only a deadlock gets here
		t.Fatal("deadlock: completing an operation that checks its lock-sharing sibling")
	}
	assert.Equal(t, int32(1), a.completions.Load())
	assert.Equal(t, int32(1), b.completions.Load())
}

// TestCallbacksMayReenter: OnComplete checks another key of the same
// purgatory, its own key again, and a key of another purgatory; and
// OnExpiration does the same from the timer's goroutine. No lock of the
// library is held meanwhile, the operation's own included.
func TestCallbacksMayReenter(t *testing.T) {
	p, clk := newTestPurgatory(t)
	other, _ := newTestPurgatory(t)
	downstream := newMockOp()
	submit(t, other, downstream, time.Minute, "d")
	sibling := newMockOp()
	submit(t, p, sibling, time.Minute, "s")

	op := newMockOp()
	op.onComplete = func() {
		assert.True(t, op.Mutex().TryLock(), "the operation's own lock is released")
		op.Mutex().Unlock()
		p.CheckAndComplete("k") // its own key: finds it completed
		sibling.completable.Store(true)
		p.CheckAndComplete("s")
		downstream.completable.Store(true)
		other.CheckAndComplete("d")
		_, err := p.TryCompleteElseWatch(newMockOp(), time.Minute, "new")
		assert.NoError(t, err, "and submit")
	}
	submit(t, p, op, 5*time.Millisecond, "k")
	clk.Advance(5 * time.Millisecond) // completes by expiring, on the clock's goroutine
	assert.Equal(t, int32(1), op.completions.Load())
	assert.Equal(t, int32(1), sibling.completions.Load())
	assert.Equal(t, int32(1), downstream.completions.Load())
}

// panicky panics in the callback named by where.
type panicky struct {
	operation.State
	where string
	ready bool
}

func (p *panicky) TryComplete() bool {
	if p.where == "TryComplete" {
		panic("boom in TryComplete")
	}
	return p.ready
}

func (p *panicky) OnComplete() {
	if p.where == "OnComplete" {
		panic("boom in OnComplete")
	}
}

func (p *panicky) OnExpiration() {
	if p.where == "OnExpiration" {
		panic("boom in OnExpiration")
	}
}

func TestPanickingCallbacksAreRecoveredAndCounted(t *testing.T) {
	core, logs := observer.New(zapcore.ErrorLevel)
	reg := prometheus.NewPedanticRegistry()
	p, clk := newTestPurgatory(t, WithLogger(zap.New(core)), WithRegisterer(reg))

	tc := &panicky{where: "TryComplete"}
	_, err := p.TryCompleteElseWatch(tc, 5*time.Millisecond, "k")
	require.NoError(t, err, "a panicking TryComplete counts as not yet")
	oc := &panicky{where: "OnComplete", ready: true}
	done, err := p.TryCompleteElseWatch(oc, time.Minute, "k")
	require.NoError(t, err)
	assert.True(t, done)
	oe := &panicky{where: "OnExpiration"}
	submit(t, p, oe, 5*time.Millisecond, "k2")

	clk.Advance(5 * time.Millisecond)
	assert.Equal(t, operation.Expired, tc.Outcome(), "the lock was released: it still expires")
	assert.Equal(t, operation.Expired, oe.Outcome())

	ok := newMockOp()
	ok.completable.Store(true)
	assert.True(t, submit(t, p, ok, time.Minute, "k"), "and the purgatory keeps working")

	assert.Equal(t, 4.0, testutil.ToFloat64(p.obs.m.panics), "TryComplete twice (submit tries twice), OnComplete, OnExpiration")
	var callbacks []string
	for _, e := range logs.All() {
		callbacks = append(callbacks, e.ContextMap()["callback"].(string))
	}
	assert.ElementsMatch(t, []string{"TryComplete", "TryComplete", "OnComplete", "OnExpiration"}, callbacks)
}

func TestCloseAnswersEveryPendingOperation(t *testing.T) {
	clk := timer.NewManualClock(0)
	p, err := New[string]("close", WithClock(clk))
	require.NoError(t, err)
	var ops []*mockOp
	for i := range 10 {
		op := newMockOp()
		submit(t, p, op, time.Minute, key(i), "shared")
		ops = append(ops, op)
	}
	early := newMockOp()
	early.completable.Store(true)
	submit(t, p, early, time.Minute, "x")

	require.NoError(t, p.Close())
	for _, op := range ops {
		assert.Equal(t, int32(1), op.completions.Load(), "answered once although watched under two keys")
		assert.Zero(t, op.expirations.Load())
		assert.Equal(t, operation.Closed, op.Outcome())
	}
	assert.Equal(t, operation.Completed, early.Outcome())
	assert.Equal(t, 0, p.Watched())
	assert.Equal(t, 0, p.Delayed())
	require.NoError(t, p.Close(), "idempotent")

	_, err = p.TryCompleteElseWatch(newMockOp(), time.Minute, "k")
	assert.ErrorIs(t, err, ErrClosed)
	clk.Advance(time.Hour)
	for _, op := range ops {
		assert.Equal(t, int32(1), op.completions.Load(), "nothing runs after Close")
	}
	// goleak (TestMain) checks that the reaper and the timer's goroutines
	// are gone.
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p, clk := newTestPurgatory(t, WithRegisterer(reg), WithPurgeInterval(100))

	done := newMockOp()
	done.completable.Store(true)
	submit(t, p, done, time.Minute, "a") // completed at once
	expiring := newMockOp()
	submit(t, p, expiring, 10*time.Millisecond, "a", "b")
	forced := newMockOp()
	submit(t, p, forced, time.Minute, "a", "b")
	checked := newMockOp()
	submit(t, p, checked, time.Minute, "c")
	cancelled := newMockOp()
	submit(t, p, cancelled, time.Minute, "d")

	expect := func(pending, watched, delayed float64, outcomes map[string]float64) {
		t.Helper()
		var b strings.Builder
		b.WriteString("# HELP purgatory_operations_pending Operations submitted and not yet answered, each once whatever its keys.\n# TYPE purgatory_operations_pending gauge\n")
		b.WriteString("purgatory_operations_pending{purgatory=\"" + t.Name() + "\"} " + ftoa(pending) + "\n")
		b.WriteString("# HELP purgatory_watch_entries Watch entries, not operations: an operation counts once per key until its entry is dropped, completed or not (Kafka's PurgatorySize).\n# TYPE purgatory_watch_entries gauge\n")
		b.WriteString("purgatory_watch_entries{purgatory=\"" + t.Name() + "\"} " + ftoa(watched) + "\n")
		b.WriteString("# HELP purgatory_operations_delayed Operations waiting for their deadline (Kafka's NumDelayedOperations).\n# TYPE purgatory_operations_delayed gauge\n")
		b.WriteString("purgatory_operations_delayed{purgatory=\"" + t.Name() + "\"} " + ftoa(delayed) + "\n")
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(b.String()),
			"purgatory_operations_pending", "purgatory_watch_entries", "purgatory_operations_delayed"))
		for o, want := range outcomes {
			assert.Equal(t, want, testutil.ToFloat64(p.obs.m.completions[outcomeByName(o)]), "outcome %s", o)
		}
	}
	expect(4, 6, 4, map[string]float64{"completed": 1})

	forced.ForceComplete()
	checked.completable.Store(true)
	p.CheckAndComplete("c")
	for _, op := range p.CancelForKey("d") {
		op.OperationState().ForceComplete()
	}
	clk.Advance(10 * time.Millisecond)
	// Watched: the completed entries under a, b and c stay until a purge;
	// no operation is pending.
	expect(0, 5, 0, map[string]float64{"completed": 2, "expired": 1, "forced": 1, "cancelled": 1, "closed": 0})
	assert.Equal(t, 5.0, testutil.ToFloat64(p.obs.m.garbage), "each of them is counted")

	assert.Equal(t, uint64(1), histogramCount(t, reg, "purgatory_expiration_lateness_seconds"))
	maybePurge(p)
	quietRound(p, clk)
	assert.Equal(t, 1.0, testutil.ToFloat64(p.obs.m.purges))
	assert.Equal(t, 5.0, testutil.ToFloat64(p.obs.m.purged))
	expect(0, 0, 0, nil)

	_, err := New[string](t.Name(), WithRegisterer(reg), WithReaper(false))
	assert.Error(t, err, "a second purgatory with the same name cannot register")
	require.NoError(t, p.Close())
	again, err := New[string](t.Name(), WithRegisterer(reg), WithReaper(false))
	require.NoError(t, err, "Close gave the names back")
	require.NoError(t, again.Close())
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing left registered")
}

// TestReaperExpiresAndPurges runs the real reaper on the real clock inside a
// synctest bubble: virtual time, deterministic.
func TestReaperExpiresAndPurges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New[string]("reaper", WithPurgeInterval(10))
		require.NoError(t, err)
		defer p.Close()
		var ops []*mockOp
		for i := range 100 {
			op := newMockOp()
			submit(t, p, op, time.Duration(10+i)*time.Millisecond, key(i), "all")
			ops = append(ops, op)
		}
		assert.Equal(t, 200, p.Watched())
		time.Sleep(109 * time.Millisecond)
		synctest.Wait()
		for i, op := range ops {
			assert.Equal(t, int32(1), op.expirations.Load(), "operation %d expired", i)
		}
		// The reaper purges at its first quiet round: rounds are at most
		// reaper.DefaultMaxWait (200 ms) apart, and the round after the
		// last completion may still see it counted since the one before
		// (the expirations run on the timer's workers, not in the round),
		// so within two rounds. The operations' keys are dropped.
		time.Sleep(2*reaper.DefaultMaxWait + 50*time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 0, p.Watched())
		assert.Equal(t, 0, p.w.Keys())
	})
}

func outcomeByName(name string) operation.Outcome {
	for _, o := range operation.Outcomes() {
		if o.String() == name {
			return o
		}
	}
	panic(name)
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func histogramCount(t *testing.T, reg prometheus.Gatherer, name string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestListsEmptyAfterLoadEvenWithSlowCallbacks: expirations handed to the
// timer's workers leave the timer's count before their operations complete.
// A reaper round in that window used to reset the estimate of completed
// entries and purge while they were still pending, and nothing purged them
// afterwards. Once nothing waits, the reaper now purges whatever is listed.
func TestListsEmptyAfterLoadEvenWithSlowCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New[string]("slow", WithTimerOptions(timer.WithWorkers(2)))
		require.NoError(t, err)
		defer p.Close()
		for range 200 {
			op := newMockOp()
			op.onComplete = func() { time.Sleep(time.Millisecond) }
			submit(t, p, op, 20*time.Millisecond, "a", "b", "c")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, 0, p.Delayed())
		assert.Equal(t, 0, p.Watched(), "the lists empty once the load has ended")
	})
}

// A TryComplete that checks its own operation's key (it changed what it
// reads and says so) re-enters a check that finds the operation locked by
// its own goroutine. Go's mutex is not re-entrant, so the check must not
// wait for that lock: it leaves the operation to the try in progress, which
// tries once more when it ends and completes it if it can.
func TestCheckAndCompleteFromItsOwnTryComplete(t *testing.T) {
	p, _ := newTestPurgatory(t)
	op := newMockOp()
	op.onTry = func(n int32) {
		if n == 3 { // the check below: a member arrived, the condition holds now
			op.completable.Store(true)
			p.CheckAndComplete("k")
		}
	}
	submit(t, p, op, time.Minute, "k")
	testwait.Returns(t, "CheckAndComplete from the operation's own TryComplete", func() {
		p.CheckAndComplete("k")
	})
	assert.Equal(t, int32(1), op.completions.Load(), "completed, once")
	assert.Equal(t, operation.Completed, op.Outcome())

	// The same during the submission's second try, after the watch.
	op2 := newMockOp()
	op2.onTry = func(n int32) {
		if n == 2 {
			p.CheckAndComplete("k2")
		}
	}
	testwait.Returns(t, "CheckAndComplete from TryComplete during the submission", func() {
		submit(t, p, op2, time.Minute, "k2")
	})
	assert.False(t, op2.IsCompleted())
	op2.completable.Store(true)
	assert.Equal(t, 1, p.CheckAndComplete("k2"))
}

// A TryComplete that checks its own key at every try would have each try
// ask for the next one, for ever; it is refused with a panic that names
// the cause, the operation's lock released.
func TestTryCompleteCheckingItselfAtEveryTryIsRefused(t *testing.T) {
	p, _ := newTestPurgatory(t)
	op := newMockOp()
	checking := false
	op.onTry = func(int32) {
		if checking {
			p.CheckAndComplete("k")
		}
	}
	submit(t, p, op, time.Minute, "k")
	checking = true
	assert.PanicsWithValue(t, "operation: TryComplete calls CheckAndComplete on a key of its own operation at every try; "+
		"it must report whether the condition holds, and checks belong after the change, outside TryComplete",
		func() { p.CheckAndComplete("k") })
	assert.True(t, op.Mutex().TryLock(), "the lock was released")
	op.Mutex().Unlock()
	checking = false
	op.completable.Store(true)
	assert.Equal(t, 1, p.CheckAndComplete("k"), "the operation is still there to complete")
}

// Without a logger, a recovered panic is written to standard error with
// its stack (as net/http does), at most once a minute per purgatory and
// callback: never silent.
func TestPanicsWithoutALoggerGoToStandardError(t *testing.T) {
	var out syncBuffer
	clock := time.Unix(0, 0)
	defer panics.SetForTest(&out, func() time.Time { return clock })()
	p, clk := newTestPurgatory(t)

	for range 3 {
		oc := &panicky{where: "OnComplete", ready: true}
		_, err := p.TryCompleteElseWatch(oc, time.Minute, "k")
		require.NoError(t, err)
	}
	oe := &panicky{where: "OnExpiration"}
	submit(t, p, oe, time.Millisecond, "k")
	clk.Advance(time.Millisecond)

	s := out.String()
	assert.Equal(t, 1, strings.Count(s, "purgatory "+t.Name()+": OnComplete panicked"), "once a minute:\n%s", s)
	assert.Equal(t, 1, strings.Count(s, "purgatory "+t.Name()+": OnExpiration panicked"), "each callback apart:\n%s", s)
	assert.Contains(t, s, "callbacks_test.go", "with the stack of the panic")
	assert.Contains(t, s, "give it a logger", "and says how to log it instead")
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
