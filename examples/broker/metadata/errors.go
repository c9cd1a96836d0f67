package metadata

import (
	"errors"
	"fmt"
)

var (
	// ErrUnknownTopic is returned for a topic id or name the image lacks.
	ErrUnknownTopic = errors.New("metadata: unknown topic")
	// ErrTopicExists is returned when creating a topic whose name is taken.
	ErrTopicExists = errors.New("metadata: topic exists")
	// ErrUnknownPartition is returned for a partition index out of range.
	ErrUnknownPartition = errors.New("metadata: unknown partition")
	// ErrFencedLeaderEpoch is returned for an ISR change from a leader
	// whose epoch is not the partition's (Kafka's FENCED_LEADER_EPOCH).
	ErrFencedLeaderEpoch = errors.New("metadata: fenced leader epoch")
	// ErrNotLeader is returned for an ISR change sent by a broker that
	// does not lead the partition (NOT_LEADER_OR_FOLLOWER).
	ErrNotLeader = errors.New("metadata: not the leader")
	// ErrStalePartitionEpoch is returned for an ISR change made against
	// an older partition epoch (Kafka's INVALID_UPDATE_VERSION).
	ErrStalePartitionEpoch = errors.New("metadata: stale partition epoch")
	// ErrInvalidISR is returned for an ISR that is not a subset of the
	// replicas holding the leader, or that adds a fenced broker
	// (INVALID_REQUEST, INELIGIBLE_REPLICA).
	ErrInvalidISR = errors.New("metadata: invalid ISR")
	// ErrNoBrokers is returned when placing a topic on a cluster with
	// fewer brokers than its replication factor.
	ErrNoBrokers = errors.New("metadata: not enough brokers")
	// ErrInvalidPartitions is returned when growing a topic to no more
	// partitions than it has (INVALID_PARTITIONS).
	ErrInvalidPartitions = errors.New("metadata: invalid partition count")
	// ErrInvalidReplicaAssignment is returned for a manual assignment of
	// new partitions that is not the cluster's placement
	// (INVALID_REPLICA_ASSIGNMENT).
	ErrInvalidReplicaAssignment = errors.New("metadata: invalid replica assignment")
	// ErrInvalidConfig is returned for a config change that cannot be
	// made: an operation on a list config applied to one that is not
	// (INVALID_CONFIG).
	ErrInvalidConfig = errors.New("metadata: invalid config")
	// ErrInvalidRequest is returned for a config resource whose name
	// cannot be one (a broker's that is no id: INVALID_REQUEST).
	ErrInvalidRequest = errors.New("metadata: invalid request")
)

// kafkaError is one of the errors above whose text is Kafka's own message
// for it, as clients show it (CreatePartitions' error_message), without
// the sentinel's prefix.
type kafkaError struct {
	err error // the sentinel, for errors.Is
	msg string
}

func (e *kafkaError) Error() string { return e.msg }
func (e *kafkaError) Unwrap() error { return e.err }

// kafkaErrorf returns err with Kafka's message, formatted.
func kafkaErrorf(err error, format string, args ...any) error {
	return &kafkaError{err: err, msg: fmt.Sprintf(format, args...)}
}
