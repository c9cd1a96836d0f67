// Package txn is the broker's transaction coordinator (Apache Kafka's
// TransactionCoordinator, with its TransactionStateManager and
// TransactionMetadata; KIP-98): it hands transactional producers their
// producer ids and epochs, keeps which partitions each transaction
// wrote to, and ends transactions by having markers written to those
// partitions. It serves Kafka's transaction versions 1 and 2, each
// producer the one it speaks: with version 1 the epoch is bumped by
// InitProducerID and by fences; with version 2 (KIP-890 part 2: EndTxnV2,
// AddPartitionsV2) by every end of a transaction too, and a producer's
// partitions are added by the leaders it produces to (end_v2.go). It knows
// nothing of the wire: package server decodes the requests, routes them
// with the state topic's KeyError, calls the Coordinator and encodes what
// it answers; it also writes the markers (a MarkerWriter).
//
// # States
//
// A transactional id moves through Kafka's states (State):
//
//   - Empty: after InitProducerID, which gives the producer a new producer
//     id at epoch 0 for a new id, and bumps the epoch of one with no
//     transaction under way (a new producer id once the epochs are
//     exhausted), fencing the producer before it. With KIP-360's producer
//     id and epoch, a producer that lost an answer gets the same one.
//   - Empty, CompleteCommit, CompleteAbort → Ongoing: AddPartitions (or
//     AddOffsets, the group's __consumer_offsets partition) starts a
//     transaction; more partitions extend it.
//   - Ongoing → PrepareCommit or PrepareAbort: EndTxn, answered once it is
//     written. The markers follow, then → CompleteCommit or CompleteAbort.
//     With version 2 (EndTxnV2) the Prepare is at epoch+1, which the
//     markers carry and the producer is answered, or, once the epochs are
//     exhausted, names a new producer id that the Complete moves the id
//     to; Empty, CompleteCommit, CompleteAbort → PrepareAbort too, an
//     empty transaction's abort.
//   - Ongoing → PrepareEpochFence → PrepareAbort: an InitProducerID that
//     finds a transaction under way, or the transaction's timeout, aborts
//     it at a bumped epoch, so that its producer is fenced
//     (PRODUCER_FENCED); the InitProducerID is answered
//     CONCURRENT_TRANSACTIONS and its retry bumps the epoch again.
//     PrepareEpochFence is never written: it is the pending state while the
//     abort is. A version 2 transaction's abort bumps the epoch once more,
//     as every version 2 end does.
//   - Empty, CompleteCommit, CompleteAbort → Dead: the id was idle for
//     Config.IDExpiration (transactional.id.expiration.ms); its tombstone
//     is written and it is forgotten.
//
// Every change is written to the id's partition of __transaction_state
// before it takes effect (a Log; records.go has the format, kmsg's
// TxnMetadataKey and TxnMetadataValue), and waits for its replication with
// min.insync.replicas enforced, as Kafka appends with acks=-1. While a
// write is under way, and while a transaction's markers are written, the
// id's requests are CONCURRENT_TRANSACTIONS, which clients retry (Kafka's
// pending state). A write that fails is answered as Kafka maps it
// (NOT_COORDINATOR, else COORDINATOR_NOT_AVAILABLE) and leaves the id as
// its log says, except that a fence's epoch stays bumped in memory, as in
// Kafka.
//
// # Markers
//
// Once PrepareCommit or PrepareAbort is written, the producer is answered
// and the markers (Marker: producer id, epoch, commit or abort, and the
// coordinator epoch, the leader epoch of the __transaction_state
// partition this coordinator loaded the id at) are handed to the
// MarkerWriter for every partition of the transaction. Those that fail are
// written again after Config.RetryBackoff, a timer task; a partition whose
// topic is gone (ErrPartitionGone) is dropped, as Kafka drops a deleted
// topic's. Once all are written, CompleteCommit or CompleteAbort is
// written (again after the backoff until it is), and the transaction's
// partitions are cleared. A retry of the EndTxn then succeeds.
//
// # Timers
//
// Every wait is a task on the coordinator's timer (package timer; with a
// *timer.ManualClock, as in the tests, every one runs inside
// ManualClock.Advance): an Ongoing transaction's timeout, armed when it
// starts and replaced when it ends; an idle id's expiration, armed at each
// change; the markers' and the completion's retries. There is no sweep
// over every id, as Kafka's cleanup intervals have: each costs O(1) on
// the timer (timers.go).
//
// # Waiting for a completion
//
// With Config.CompletionWait, an AddPartitions (or AddOffsets) that finds
// the producer's previous transaction still completing waits for the
// completion in the TxnCompletion purgatory, keyed by its transactional
// id, instead of being answered CONCURRENT_TRANSACTIONS at once as Kafka
// answers it (past the wait it is): a producer that commits and begins
// again at once does not back off (completion.go).
//
// # Placement, load and unload
//
// Host hosts the coordinator on the coordinator runtime (package
// coordinator), on __transaction_state (transaction.state.log.* for its
// partitions, replication factor and min.insync.replicas, the last two
// capped at the cluster's size): each id lives in the partition
// coordinator.PartitionFor gives it, coordinated by that partition's
// leader. On becoming leader, the runtime replays the partition (a
// Replay) and hands it to Load: a PrepareCommit or PrepareAbort has its
// markers written again at the new coordinator epoch and is completed, an
// Ongoing transaction has its timeout armed from its start, an idle id
// its expiration from its last change. Unload forgets a partition's ids,
// cancels their timers and answers the requests waiting for one of their
// writes NOT_COORDINATOR; markers under way for them end without effect,
// since the partition's next coordinator writes them again.
//
// # Goroutines and lock order
//
// None of its own: the methods run on the request handlers' goroutines,
// the writes' answers on whichever goroutine ends the wait (the Produce
// purgatory's), the markers' on the MarkerWriter's, the timer's tasks on
// its workers (or inside ManualClock.Advance).
//
// Lock order: the runtime's Topic.mu (held across Load and Unload), then
// a TxnCompletion operation's lock (its TryComplete reads the id), then
// a transactional id's mutex (txn.mu; everything of the id, as Kafka's
// TransactionMetadata lock), then Coordinator.mu (the maps of ids and
// partitions, a leaf but for the next), then what Log.Append takes (the
// runtime's compaction and storage locks: an id's records are appended
// under its mutex, so that the log has them in the order they happened)
// and the timer's locks (an alarm is cancelled under it). No lock of the
// coordinator's is held while it answers a request, waits for a write,
// calls the MarkerWriter or NextProducerID, or schedules a timer task
// (one that is due runs inside Schedule on a timer without workers, and
// takes the id's mutex): a section under an id's mutex records what it
// leaves to do (an after), and that runs once the mutex is released.
//
// # Not here
//
// KIP-939's two-phase commit (the version 1 value's next epoch), and
// the mapping of PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for old
// request versions, which is the handlers' (as it is KafkaApis's);
// TxnOffsetCommit is the group coordinator's, and WriteTxnMarkers the
// partitions' leaders'.
package txn
