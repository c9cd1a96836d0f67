package watchers

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/internal/panics"
	"github.com/gopurgatory/purgatory/operation"
)

func TestWatchCheckRemovePurge(t *testing.T) {
	w := New[string](4)
	ready := false
	try := func() bool { return ready }
	a, b := operation.NewFunc(try, nil, nil), operation.NewFunc(try, nil, nil)
	done, err := w.Watch(a, "k", "other")
	require.NoError(t, err)
	assert.False(t, done)
	_, err = w.Watch(b, "k")
	require.NoError(t, err)
	assert.Equal(t, 3, w.Watched())
	assert.Equal(t, 2, w.Keys())

	ready = true
	assert.Equal(t, 2, w.CheckAndComplete("k"))
	assert.Equal(t, operation.Completed, a.Outcome())
	assert.Equal(t, 3, w.Watched(), "the entries stay until k's next check or a purge")
	assert.Equal(t, 3, w.Purge(), "k's two and a's under the other key")
	assert.Equal(t, 0, w.CheckAndComplete("k"))
	assert.Equal(t, 0, w.Watched())
	assert.Equal(t, 0, w.Keys())

	_, err = w.Watch(a, "k")
	assert.ErrorIs(t, err, operation.ErrSubmitted)
	_, err = w.Watch(operation.NewFunc(nil, nil, nil))
	assert.ErrorIs(t, err, ErrNoKeys)
}

func TestWatchCompletesAtOnce(t *testing.T) {
	w := New[int](0)
	op := operation.NewFunc(func() bool { return true }, nil, nil)
	done, err := w.Watch(op, 1)
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, 0, w.Watched(), "never listed")
}

func TestRemoveHandsBackThePending(t *testing.T) {
	w := New[string](0)
	a, b := operation.NewFunc(nil, nil, nil), operation.NewFunc(nil, nil, nil)
	_, _ = w.Watch(a, "k")
	_, _ = w.Watch(b, "k", "j")
	a.ForceComplete()
	got := w.Remove("k")
	require.Equal(t, []operation.Operation{b}, got)
	assert.True(t, got[0].OperationState().ForceComplete())
	assert.Equal(t, operation.Forced, b.Outcome())
	assert.Empty(t, w.Remove("k"))
}

// Many goroutines watch and check: every operation is answered once.
func TestConcurrentWatchAndCheck(t *testing.T) {
	w := New[int](8)
	var mu sync.Mutex
	answered := map[*operation.Func]int{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				var op *operation.Func
				op = operation.NewFunc(func() bool { return true }, func() {
					mu.Lock()
					answered[op]++
					mu.Unlock()
				}, nil)
				_, err := w.Watch(op, (g*1000+i)%31)
				assert.NoError(t, err)
				w.CheckAndComplete((g + i) % 31)
			}
		})
	}
	wg.Wait()
	assert.Len(t, answered, 4000)
	for _, n := range answered {
		require.Equal(t, 1, n)
	}
}

// Watchers have no logger: a panicking callback is written to standard
// error with its stack, never dropped silently.
func TestPanicsGoToStandardError(t *testing.T) {
	var out bytes.Buffer
	defer panics.SetForTest(&out, func() time.Time { return time.Unix(0, 0) })()
	w := New[string](4)
	op := operation.NewFunc(func() bool { return true }, func() { panic("boom") }, nil)
	done, err := w.Watch(op, "k")
	require.NoError(t, err)
	assert.True(t, done, "answered: a panicking OnComplete still counts")
	assert.Contains(t, out.String(), "operation: OnComplete panicked: boom")
	assert.Contains(t, out.String(), "watchers_test.go", "with the panic's stack")
}
