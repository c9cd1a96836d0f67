package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrInvalidConfig is wrapped by New when an option is out of range.
var ErrInvalidConfig = errors.New("group: invalid configuration")

// The coordinator answers with Kafka's error codes, as the *kerr.Error
// values of franz-go (a plain table of codes, no wire encoding): a nil
// *kerr.Error is NONE, and Code is the code a response carries. Each
// method documents the errors it returns, as Kafka's GroupCoordinator
// does.
var (
	errNotAvailable  = kerr.CoordinatorNotAvailable // closed, or a group died under the request
	errNotCoord      = kerr.NotCoordinator          // a waiting request cut short by Close
	errUnknownMember = kerr.UnknownMemberID
	errGeneration    = kerr.IllegalGeneration
	errRebalance     = kerr.RebalanceInProgress
	errFenced        = kerr.FencedInstanceID
	errInconsistent  = kerr.InconsistentGroupProtocol
	errInvalidGroup  = kerr.InvalidGroupID

	// errStore answers a request whose change the store refused: Kafka
	// answers NOT_COORDINATOR when it cannot append to __consumer_offsets
	// for a storage error, and the client looks the coordinator up and
	// retries.
	errStore = kerr.NotCoordinator
)

// storeCode is the answer to a change an OffsetStore refused with err, or
// did not make durable: the *kerr.Error it wraps, else errStore.
func storeCode(err error) *kerr.Error {
	if ke := (*kerr.Error)(nil); errors.As(err, &ke) {
		return ke
	}
	return errStore
}

// syncStoreCode is the answer to a SyncGroup whose group metadata the
// store refused with err, or did not make durable, as Kafka's storeGroup
// maps its append's errors: the partition missing, too few replicas or a
// timeout are COORDINATOR_NOT_AVAILABLE; a record too large is
// UNKNOWN_SERVER_ERROR; anything else is storeCode's.
func syncStoreCode(err error) *kerr.Error {
	switch ke := storeCode(err); ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.UnknownServerError
	default:
		return ke
	}
}

// commitStoreCode is the answer to an OffsetCommit whose offsets the store
// refused with err, or did not make durable, as Kafka 4's group
// coordinator maps its append's errors: the partition missing, too few
// replicas or a write that timed out are COORDINATOR_NOT_AVAILABLE, which
// clients retry (a timeout answered as it is ends a kgo transactional
// flush); a commit too large to store (tens of
// thousands of partitions, or their metadata) is INVALID_COMMIT_OFFSET_SIZE,
// which a client does not retry as it would NOT_COORDINATOR; anything else
// is storeCode's.
func commitStoreCode(err error) *kerr.Error {
	switch ke := storeCode(err); ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.InvalidCommitOffsetSize
	default:
		return ke
	}
}

// Code returns err's Kafka error code; nil is NONE (0). Unlike converting
// err to an error first, it never mistakes a typed nil for an error.
func Code(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}
