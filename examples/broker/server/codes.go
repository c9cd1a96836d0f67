package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// storageCodes maps the storage's errors to the Kafka error codes a client
// acts on, in the order they are checked.
var storageCodes = []struct {
	err  error
	code *kerr.Error
}{
	{storage.ErrCorruptBatch, kerr.CorruptMessage},
	{storage.ErrInvalidRecord, kerr.InvalidRecord},
	{storage.ErrTransactional, kerr.InvalidTxnState},
	{storage.ErrBatchTooLarge, kerr.MessageTooLarge},
	{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{storage.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{storage.ErrDeleted, kerr.UnknownTopicOrPartition},
	{storage.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{storage.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{storage.ErrTopicExists, kerr.TopicAlreadyExists},
	{storage.ErrInvalidTopic, kerr.InvalidTopicException},
	{storage.ErrInvalidPartitions, kerr.InvalidPartitions},
	{storage.ErrInvalidConfig, kerr.InvalidConfig},
	{errReplicationFactor, kerr.InvalidReplicationFactor},
	{errReplicaAssignment, kerr.InvalidReplicaAssignment},
	{errInvalidRequest, kerr.InvalidRequest},
	{errNotLeader, kerr.NotLeaderForPartition},
	{errNotEnoughReplicas, kerr.NotEnoughReplicas},
	{errNotController, kerr.NotController},
	{errLeaderNotAvailable, kerr.LeaderNotAvailable},
}

// errorCode returns the Kafka error code for err: 0 for nil, the mapped code
// for a storage error, and KAFKA_STORAGE_ERROR for anything else, which can
// only come from the log itself (Kafka's answer to a failing disk).
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, m := range storageCodes {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	return kerr.KafkaStorageError.Code
}

// partitionErrorCode is errorCode for a partition a client named by topic
// id (Fetch v13+, Produce v13+): a topic gone is UNKNOWN_TOPIC_ID there,
// which tells the client to refresh its ids.
func partitionErrorCode(err error, byID bool) int16 {
	if byID && (errors.Is(err, storage.ErrUnknownTopic) || errors.Is(err, storage.ErrDeleted)) {
		return kerr.UnknownTopicID.Code
	}
	return errorCode(err)
}

// errorMessage returns err's text for the error message fields of newer
// versions, or nil.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	msg := err.Error()
	return &msg
}
