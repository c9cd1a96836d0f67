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
)
