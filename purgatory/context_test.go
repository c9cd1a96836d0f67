package purgatory

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gopurgatory/purgatory/operation"
)

func TestCompleteWhenDone(t *testing.T) {
	p, _ := newTestPurgatory(t)
	ctx, cancel := context.WithCancel(t.Context())
	op := newMockOp()
	done := make(chan struct{})
	op.onComplete = func() { close(done) }
	submit(t, p, op, time.Hour, "k")
	CompleteWhenDone(ctx, op)
	cancel() // the client went away
	<-done   // answered on context's goroutine, not after an hour
	assert.Equal(t, operation.Forced, op.Outcome())
	assert.Equal(t, 0, p.Delayed())

	// Completed first: the context no longer matters.
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	op2 := newMockOp()
	submit(t, p, op2, time.Hour, "k2")
	stop := CompleteWhenDone(ctx2, op2)
	op2.completable.Store(true)
	p.CheckAndComplete("k2")
	assert.True(t, stop(), "untied before ctx ended")
	assert.Equal(t, operation.Completed, op2.Outcome())
}
