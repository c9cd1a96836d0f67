package txn

import "errors"

var (
	// ErrPartitionGone is wrapped by a MarkerWriter for a partition whose
	// topic no longer exists: the coordinator drops that partition from the
	// transaction's markers, as Kafka does for a deleted topic, instead of
	// retrying it.
	ErrPartitionGone = errors.New("txn: partition gone")
	// ErrInvalidConfig is wrapped by New and Host for a Config they cannot
	// run with.
	ErrInvalidConfig = errors.New("txn: invalid config")
	// ErrClosed is returned by Load once the coordinator is closed.
	ErrClosed = errors.New("txn: closed")
	// ErrRecord is wrapped for a batch or record of __transaction_state
	// that is not one this package writes.
	ErrRecord = errors.New("txn: not a transaction record")
)
