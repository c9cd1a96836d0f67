package storage

import "errors"

// The errors of the storage, checked with errors.Is. Each maps to one Kafka
// error code; the broker does the mapping.
var (
	// ErrCorruptBatch is wrapped by ParseBatch and Append for a batch that
	// is not a well-formed v2 record batch: too short, lengths that
	// disagree, a magic other than 2, a checksum mismatch, a record count
	// that disagrees with the last offset delta (Kafka's CORRUPT_MESSAGE).
	ErrCorruptBatch = errors.New("storage: corrupt record batch")

	// ErrInvalidRecord is wrapped for a well-formed batch that a client may
	// not write: no batch or more than one, a control batch, a producer id
	// without a sequence, a transactional batch without a producer id
	// (Kafka's INVALID_RECORD).
	ErrInvalidRecord = errors.New("storage: invalid record batch")

	// ErrInvalidTxnState is wrapped when a producer whose transaction is
	// open in the partition writes a batch that is not transactional
	// (Kafka's INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("storage: not transactional while the producer's transaction is open")

	// ErrCoordinatorFenced is wrapped by Partition.AppendMarker for a
	// marker from a transaction coordinator older than the last one that
	// wrote a marker for its producer here (Kafka's
	// TRANSACTION_COORDINATOR_FENCED).
	ErrCoordinatorFenced = errors.New("storage: transaction coordinator fenced")

	// ErrBatchTooLarge is wrapped for a batch larger than its topic's
	// max.message.bytes (Kafka's MESSAGE_TOO_LARGE).
	ErrBatchTooLarge = errors.New("storage: record batch too large")

	// ErrOutOfOrderSequence is wrapped when a producer's batch does not
	// follow its previous one (Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER).
	ErrOutOfOrderSequence = errors.New("storage: out of order sequence number")

	// ErrInvalidProducerEpoch is wrapped when a producer writes, or a
	// marker is written for it, with an epoch older than one already
	// written (Kafka's INVALID_PRODUCER_EPOCH).
	ErrInvalidProducerEpoch = errors.New("storage: producer epoch is stale")

	// ErrOffsetOutOfRange is wrapped when an offset is before the log start
	// or after the log end (Kafka's OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")

	// ErrNotBatchBoundary is wrapped by a Log's TruncateTo for an offset
	// inside a batch: a log is cut only between batches. It maps to no
	// Kafka error code: Partition.TruncateTo rounds down to the boundary
	// before it calls the log.
	ErrNotBatchBoundary = errors.New("storage: offset is not a batch boundary")

	// ErrOffsetMismatch is wrapped by Partition.AppendReplica for a
	// leader's batch whose base offset is before the follower's log end
	// offset (after it is a gap a compacted leader's log has): the
	// follower fetched from the wrong offset, or truncated meanwhile. It maps to no Kafka error code (Kafka's
	// UnexpectedAppendOffsetException): the follower fetches again from
	// its log end.
	ErrOffsetMismatch = errors.New("storage: batch base offset is not the log end offset")

	// ErrSegmentChanged is wrapped by Log.Replace for a segment that is
	// no longer as the cleaner read it: a truncation or retention took
	// it meanwhile. The cleaner drops its work and reads again.
	ErrSegmentChanged = errors.New("storage: segment changed while it was cleaned")

	// ErrLeaderEpochMoved is wrapped by Partition.AppendReplicaAt when the
	// partition's leader epoch is no longer the one the follower's fetch
	// was made at: leadership moved while the fetch was in flight. It maps
	// to no Kafka error code: the follower drops the answer and reconciles
	// with the new leader.
	ErrLeaderEpochMoved = errors.New("storage: the partition's leader epoch moved")

	// ErrDeleted is wrapped when a partition's topic was deleted.
	ErrDeleted = errors.New("storage: partition deleted")

	// ErrUnknownTopic is wrapped when no topic has the name or id asked for.
	ErrUnknownTopic = errors.New("storage: unknown topic")

	// ErrUnknownPartition is wrapped when a topic has no such partition.
	ErrUnknownPartition = errors.New("storage: unknown partition")

	// ErrTopicExists is wrapped when creating a topic whose name, or id,
	// is taken.
	ErrTopicExists = errors.New("storage: topic already exists")

	// ErrInvalidTopic is wrapped for a topic name Kafka would refuse.
	ErrInvalidTopic = errors.New("storage: invalid topic name")

	// ErrInvalidPartitions is wrapped when creating a topic with fewer than
	// one partition.
	ErrInvalidPartitions = errors.New("storage: invalid number of partitions")

	// ErrPartitionLimit is wrapped when creating a topic would take the
	// store past its partition limit (WithMaxPartitions; Kafka's
	// POLICY_VIOLATION, as KIP-578 proposes).
	ErrPartitionLimit = errors.New("storage: partition limit reached")

	// ErrInvalidReplicationFactor is wrapped when creating a topic with a
	// negative replication factor (Kafka's INVALID_REPLICATION_FACTOR).
	ErrInvalidReplicationFactor = errors.New("storage: invalid replication factor")

	// ErrInvalidConfig is wrapped for a topic config that is unknown,
	// unsupported or out of range.
	ErrInvalidConfig = errors.New("storage: invalid topic config")

	// ErrClosed is returned after the store is closed.
	ErrClosed = errors.New("storage: closed")

	// ErrInvalidOption is wrapped by New for an option out of range.
	ErrInvalidOption = errors.New("storage: invalid option")
)
