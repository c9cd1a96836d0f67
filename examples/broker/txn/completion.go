package txn

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/operation"
)

// A producer that commits and begins its next transaction at once finds
// the first still completing: EndTxn is answered once PrepareCommit is
// written, and the markers and CompleteCommit follow. Kafka answers the
// next AddPartitionsToTxn CONCURRENT_TRANSACTIONS meanwhile, and the
// producer backs off (kgo and the Java client: 20ms) and tries again,
// which on a replicated cluster, where the completion takes a few hundred
// microseconds, costs more than the transaction itself. Here, with
// Config.CompletionWait, the request waits instead: a delayedAdd in the
// TxnCompletion purgatory, keyed by its transactional id, completed when
// the completion is written (or the id forgotten: unloaded, the
// coordinator closing) and tried again then (a version 2 producer's add,
// which its partition's leader sends, also waits for another add's
// write: the leaders of a transaction's partitions add them at once); past CompletionWait it is
// answered CONCURRENT_TRANSACTIONS, as Kafka answers it, so that markers
// held up by a partition without a leader hold no request for long.
//
// Lock order: the operation's lock (TryComplete), then the txn's mutex.
// The wait is submitted, and the purgatory checked, with no txn's mutex
// held (through an after).

// delayedAdd is an AddPartitions waiting for the producer's previous
// transaction to complete.
type delayedAdd struct {
	operation.State
	t       *txn
	retry   func()            // the request, tried again
	respond func(*kerr.Error) // its answer, past the wait
}

// TryComplete reports whether the previous transaction is complete and
// no write of the id's is under way, or the id forgotten: the request may
// be tried again.
func (d *delayedAdd) TryComplete() bool {
	d.t.mu.Lock()
	defer d.t.mu.Unlock()
	return d.t.gone || (d.t.send == nil && d.t.pending == nil)
}

// OnComplete tries the request again, or, past the wait, answers it
// CONCURRENT_TRANSACTIONS; cut short by the coordinator closing, the try
// answers it as a closed coordinator does.
func (d *delayedAdd) OnComplete() {
	if d.Outcome() == operation.Expired {
		d.respond(errConcurrent)
		return
	}
	d.retry()
}

func (d *delayedAdd) OnExpiration() {}

// awaitCompletionLocked has a request wait for t's transaction to
// complete (retry tries it again), through a.
//
// REQUIRES: t.mu held; t.send set.
func (c *Coordinator) awaitCompletionLocked(t *txn, retry func(), respond func(*kerr.Error), a *after) {
	op := &delayedAdd{t: t, retry: retry, respond: respond}
	a.do(func() {
		if _, err := c.completions.TryCompleteElseWatch(op, c.cfg.CompletionWait, t.id); err != nil {
			respond(errNotAvailable) // closing
		}
	})
}

// completedLocked has what waits for t's transaction to complete tried
// again, once t.mu is released (through a): its completion, or another
// write of t's, is written, or t is forgotten.
//
// REQUIRES: t.mu held.
func (t *txn) completedLocked(a *after) {
	c, id := t.c, t.id
	a.do(func() { c.completions.CheckAndComplete(id) })
}
