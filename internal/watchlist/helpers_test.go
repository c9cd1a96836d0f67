package watchlist

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gopurgatory/purgatory/internal/lifecycle"
	"github.com/gopurgatory/purgatory/timer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type key struct {
	topic     string
	partition int32
}

// testOp completes once ready is set, and counts its completions.
type testOp struct {
	lifecycle.State
	ready       *bool
	completions atomic.Int32
}

func (o *testOp) TryComplete() bool { return o.ready != nil && *o.ready }
func (o *testOp) OnComplete()       { o.completions.Add(1) }
func (o *testOp) OnExpiration()     {}

// fixture makes started operations whose condition a flag controls.
type fixture struct {
	tm  *timer.Timer
	obs *observer
}

// observer counts the entries completions leave behind, as a purgatory
// does, and in eager mode releases them.
type observer struct {
	left    atomic.Int64
	release func(*lifecycle.State)
}

func (o *observer) Completed(s *lifecycle.State, _ lifecycle.Outcome, listed int, _ time.Duration) {
	o.left.Add(int64(listed))
	if o.release != nil {
		o.release(s)
	}
}

func (o *observer) Panicked(*lifecycle.State, string, any) {}

// garbage is what completions left behind that w has not dropped.
func (o *observer) garbage(w interface{ Dropped() int64 }) int64 { return o.left.Load() - w.Dropped() }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	tm, err := timer.New(timer.WithClock(timer.NewManualClock(0)))
	require.NoError(t, err)
	t.Cleanup(func() { tm.Close() })
	return &fixture{tm: tm, obs: &observer{}}
}

// op returns a started operation that will be watched under keys keys (1
// if none is given), and has not been yet: the caller watches it.
func (f *fixture) op(t *testing.T, ready *bool, keys ...int) *lifecycle.State {
	t.Helper()
	n := 1
	if len(keys) > 0 {
		n = keys[0]
	}
	no := false
	op := &testOp{ready: &no}
	done, err := lifecycle.Start(&op.State, op, lifecycle.NewBinding(f.tm, f.obs), n)
	require.NoError(t, err)
	require.False(t, done)
	require.False(t, lifecycle.Listed(&op.State))
	op.ready = ready
	return &op.State
}
