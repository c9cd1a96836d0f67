package share

import "errors"

var (
	// ErrInvalidRecordState is returned by Acknowledge for an offset that
	// is not acquired by the member acknowledging it (Kafka's
	// INVALID_RECORD_STATE): never delivered, delivered to another member,
	// or released already because its lock expired.
	ErrInvalidRecordState = errors.New("share: record not acquired by this member")
	// ErrInvalidAcknowledgement is returned by Acknowledge for a batch that
	// does not name its offsets in order or carries an unknown type
	// (INVALID_REQUEST).
	ErrInvalidAcknowledgement = errors.New("share: invalid acknowledgement")
	// ErrInvalidConfig is wrapped by NewManager for a Config it cannot run
	// with.
	ErrInvalidConfig = errors.New("share: invalid config")
	// ErrFenced is wrapped by a Persister's errors when a newer leader of
	// the partition, or a newer state epoch, took its state
	// (FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH): the partition is dropped.
	ErrFenced = errors.New("share: state fenced")
)
