package lifecycle

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gopurgatory/purgatory/timer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeOp is an operation made of functions; nil ones do nothing (a nil try
// never completes it).
type fakeOp struct {
	State
	try              func() bool
	complete, expire func()
}

func (f *fakeOp) TryComplete() bool { return f.try != nil && f.try() }
func (f *fakeOp) OnComplete() {
	if f.complete != nil {
		f.complete()
	}
}
func (f *fakeOp) OnExpiration() {
	if f.expire != nil {
		f.expire()
	}
}

// recorder observes completions.
type recorder struct {
	mu       sync.Mutex
	outcomes []Outcome
	listed   []int
	panics   []string
}

func (r *recorder) Completed(_ *State, o Outcome, listed int, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, o)
	r.listed = append(r.listed, listed)
}

func (r *recorder) Panicked(_ *State, cb string, _ any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.panics = append(r.panics, cb)
}

func newTimer(t *testing.T) (*timer.Timer, *timer.ManualClock) {
	t.Helper()
	clk := timer.NewManualClock(0)
	tm, err := timer.New(timer.WithClock(clk))
	require.NoError(t, err)
	t.Cleanup(func() { tm.Close() })
	return tm, clk
}

// start submits op, which must not complete at once, as watched under keys
// entries that nobody lists: what a purgatory's submission leaves.
func start(t *testing.T, op *fakeOp, tm *timer.Timer, obs Observer, keys int) *State {
	t.Helper()
	done, err := submit(&op.State, op, tm, obs, keys, func(*State) {})
	require.NoError(t, err)
	require.False(t, done)
	return &op.State
}

// submit is a whole submission, Start, watch and Listed, as a purgatory
// makes it.
func submit(s *State, cb Callbacks, tm *timer.Timer, obs Observer, keys int, watch func(*State)) (bool, error) {
	if done, err := Start(s, cb, NewBinding(tm, obs), keys); err != nil || done {
		return done, err
	}
	watch(s)
	return Listed(s), nil
}
