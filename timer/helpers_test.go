package timer

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// newManual returns a timer on a manual clock starting at start, closed at
// the end of the test.
func newManual(t *testing.T, start time.Duration, opts ...Option) (*Timer, *ManualClock) {
	t.Helper()
	clk := NewManualClock(start)
	tm, err := New(append([]Option{WithClock(clk)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { tm.Close() })
	return tm, clk
}

// recorder is a task that records the clock readings at which it ran.
type recorder struct {
	Task
	clk interface{ Now() time.Duration }

	mu   sync.Mutex
	runs []time.Duration
}

func newRecorder(clk interface{ Now() time.Duration }) *recorder {
	r := &recorder{clk: clk}
	r.Init(r)
	return r
}

func (r *recorder) Run() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, r.clk.Now())
}

func (r *recorder) ran() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.runs...)
}
