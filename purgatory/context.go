package purgatory

import (
	"context"

	"github.com/gopurgatory/purgatory/operation"
)

// CompleteWhenDone ties a submitted operation to ctx: when ctx is done (its
// client disconnected, its request was cancelled) the operation is
// force-completed, so its OnComplete answers at once and nothing is left
// waiting for its deadline. Call it after TryCompleteElseWatch; it returns
// a function that unties them (with context.AfterFunc's semantics), which
// OnComplete may call to release ctx's callback early. It allocates one
// callback per operation.
func CompleteWhenDone(ctx context.Context, op operation.Operation) (stop func() bool) {
	s := op.OperationState()
	return context.AfterFunc(ctx, func() { s.ForceComplete() })
}
