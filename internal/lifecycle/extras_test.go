package lifecycle

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestDoneClosesAfterTheCallbacks(t *testing.T) {
	tm, clk := newTimer(t)
	var op *fakeOp
	var duringComplete, duringExpire bool
	op = &fakeOp{
		complete: func() { duringComplete = isClosed(op.Done()) },
		expire:   func() { duringExpire = isClosed(op.Done()) },
	}
	early := op.Done() // before submission
	s := start(t, op, tm, nil, 1)
	assert.Equal(t, early, op.Done(), "one channel")
	_, _ = Schedule(s, time.Second, false)
	assert.False(t, isClosed(early))
	clk.Advance(time.Second)
	assert.True(t, isClosed(early), "closed once expired")
	assert.False(t, duringComplete, "not while OnComplete runs")
	assert.False(t, duringExpire, "not while OnExpiration runs")

	late := &fakeOp{}
	start(t, late, tm, nil, 1)
	late.ForceComplete()
	assert.True(t, isClosed(late.Done()), "asked for after it finished")
	require.NoError(t, late.Wait(context.Background()))
}

func TestWaitEndsWithItsContext(t *testing.T) {
	tm, _ := newTimer(t)
	op := &fakeOp{}
	start(t, op, tm, nil, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, op.Wait(ctx), context.Canceled)
	assert.Equal(t, Pending, op.Outcome(), "waiting does not complete it")
}

// Done racing the completion: whichever comes first, a waiter is released.
func TestDoneRacesCompletion(t *testing.T) {
	tm, _ := newTimer(t)
	for range 500 {
		op := &fakeOp{}
		start(t, op, tm, nil, 1)
		var wg sync.WaitGroup
		var ch <-chan struct{}
		wg.Go(func() { ch = op.Done() })
		wg.Go(func() { op.ForceComplete() })
		wg.Wait()
		<-ch
	}
}

// countingCtx counts what context.AfterFunc registers on it and unregisters.
type countingCtx struct {
	context.Context
	mu         sync.Mutex
	registered int
	stopped    int
}

// Value hides the cancelCtx inside, which context.AfterFunc would otherwise
// register with directly, bypassing AfterFunc below.
func (c *countingCtx) Value(any) any { return nil }

func (c *countingCtx) AfterFunc(f func()) func() bool {
	stop := context.AfterFunc(c.Context, f)
	c.mu.Lock()
	c.registered++
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		c.stopped++
		c.mu.Unlock()
		return stop()
	}
}

func TestTieContext(t *testing.T) {
	t.Run("cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tm, _ := newTimer(t)
			ctx, cancel := context.WithCancel(context.Background())
			op := &fakeOp{}
			s := start(t, op, tm, nil, 1)
			TieContext(ctx, s)
			cancel()
			synctest.Wait()
			assert.Equal(t, ContextDone, op.Outcome())
		})
	})
	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tm, _ := newTimer(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			expired := false
			op := &fakeOp{expire: func() { expired = true }}
			s := start(t, op, tm, nil, 1)
			TieContext(ctx, s)
			time.Sleep(time.Second)
			synctest.Wait()
			assert.Equal(t, Expired, op.Outcome(), "the context's deadline is a deadline")
			assert.True(t, expired)
		})
	})
	t.Run("untied on completion", func(t *testing.T) {
		tm, _ := newTimer(t)
		ctx := &countingCtx{Context: context.Background()}
		var cctx context.Context
		cctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx.Context = cctx
		op := &fakeOp{}
		s := start(t, op, tm, nil, 1)
		TieContext(ctx, s)
		assert.Equal(t, 1, ctx.registered)
		op.ForceComplete()
		assert.Equal(t, 1, ctx.stopped, "a long-lived context keeps nothing of a completed operation")
	})
	t.Run("completed before the tie", func(t *testing.T) {
		tm, _ := newTimer(t)
		ctx := &countingCtx{Context: context.Background()}
		cctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx.Context = cctx
		op := &fakeOp{}
		s := start(t, op, tm, nil, 1)
		op.ForceComplete()
		TieContext(ctx, s)
		assert.Equal(t, 0, ctx.registered, "nothing to tie")
	})
	t.Run("never done", func(t *testing.T) {
		tm, _ := newTimer(t)
		op := &fakeOp{}
		s := start(t, op, tm, nil, 1)
		TieContext(context.Background(), s)
		assert.Nil(t, s.ext.Load(), "no extras for a context that never ends")
	})
}

// The completion racing the tie: the registration is always undone.
func TestTieContextRacesCompletion(t *testing.T) {
	tm, _ := newTimer(t)
	for range 300 {
		cctx, cancel := context.WithCancel(context.Background())
		ctx := &countingCtx{Context: cctx}
		op := &fakeOp{}
		s := start(t, op, tm, nil, 1)
		var wg sync.WaitGroup
		wg.Go(func() { TieContext(ctx, s) })
		wg.Go(func() { op.ForceComplete() })
		wg.Wait()
		ctx.mu.Lock()
		assert.Equal(t, ctx.registered, ctx.stopped, "every registration undone")
		ctx.mu.Unlock()
		cancel()
	}
}
