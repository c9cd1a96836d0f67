package replica

import (
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
)

// A partitionWait is one partition a delayed operation of the data path
// waits on (an acks=all produce's, a DeleteRecords'): the key it is
// watched under, and whether it needs no more waiting.
type partitionWait interface {
	partition() *storage.Partition
	settled(m *Manager) bool
}

// allSettled reports whether every wait is settled: a delayed produce's
// or DeleteRecords' TryComplete. O(waits), each reading its partition.
func allSettled[W partitionWait](m *Manager, waits []W) bool {
	for _, w := range waits {
		if !w.settled(m) {
			return false
		}
	}
	return true
}

// watch submits op to pg under the partitions of waits, for at most
// timeout, tied to r's connection; an op not taken (the broker is
// closing, or the client has gone) is answered at once, from what is
// known now.
func watch[W partitionWait](m *Manager, pg *purgatory.Purgatory[TP], r Responder, op operation.Operation, timeout time.Duration, waits []W) {
	keys := make([]TP, len(waits))
	for i, w := range waits {
		keys[i] = keyOf(w.partition())
	}
	if _, err := pg.TryCompleteElseWatchContext(r.Context(), op, timeout, keys...); err != nil {
		m.log.Debug("not delayed", zap.String("purgatory", pg.Name()), zap.Error(err))
		op.OnComplete()
	}
}
