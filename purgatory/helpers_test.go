package purgatory

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/reaper"
	"github.com/gopurgatory/purgatory/timer"
)

// newTestPurgatory returns a purgatory on a manual clock with no reaper,
// closed at the end of the test: expirations run inside clk.Advance.
func newTestPurgatory(t *testing.T, opts ...Option) (*Purgatory[string], *timer.ManualClock) {
	t.Helper()
	clk := timer.NewManualClock(0)
	p, err := New[string](t.Name(), append([]Option{WithClock(clk), WithReaper(false)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p, clk
}

// mockOp completes when completable is set, and records what happened to it.
type mockOp struct {
	operation.State
	completable atomic.Bool
	tries       atomic.Int32
	completions atomic.Int32
	expirations atomic.Int32
	order       []string // callbacks in the order they ran (single-goroutine tests only)
	onComplete  func()
	onTry       func(n int32)
}

func newMockOp() *mockOp { return &mockOp{} }

func (m *mockOp) TryComplete() bool {
	n := m.tries.Add(1)
	if m.onTry != nil {
		m.onTry(n)
	}
	return m.completable.Load()
}

func (m *mockOp) OnComplete() {
	m.completions.Add(1)
	m.order = append(m.order, "complete")
	if m.onComplete != nil {
		m.onComplete()
	}
}

func (m *mockOp) OnExpiration() {
	m.expirations.Add(1)
	m.order = append(m.order, "expire")
}

func submit(t *testing.T, p *Purgatory[string], op operation.Operation, timeout time.Duration, keys ...string) bool {
	t.Helper()
	done, err := p.TryCompleteElseWatch(op, timeout, keys...)
	require.NoError(t, err)
	return done
}

// maybePurge runs what the reaper runs after each round.
func maybePurge[K comparable](p *Purgatory[K]) { (*purger[K])(p).MaybePurge() }

// quietRound is a round of the reaper a whole reaper wait after the last:
// when no completion left garbage since the previous round, the load has
// ended and whatever is listed goes.
func quietRound[K comparable](p *Purgatory[K], clk *timer.ManualClock) {
	clk.Advance(reaper.DefaultMaxWait)
	maybePurge(p)
}
