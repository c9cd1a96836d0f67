package server

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/metalog"
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
	{storage.ErrPartitionLimit, kerr.PolicyViolation},
	{storage.ErrInvalidConfig, kerr.InvalidConfig},
	{errReplicationFactor, kerr.InvalidReplicationFactor},
	{errReplicaAssignment, kerr.InvalidReplicaAssignment},
	{errInvalidRequest, kerr.InvalidRequest},
	{errNotLeader, kerr.NotLeaderForPartition},
	{errNotEnoughReplicas, kerr.NotEnoughReplicas},
	{errNotController, kerr.NotController},
	{errLeaderNotAvailable, kerr.LeaderNotAvailable},
	{metadata.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{metadata.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{metadata.ErrTopicExists, kerr.TopicAlreadyExists},
	{metadata.ErrNoBrokers, kerr.InvalidReplicationFactor},
	{controller.ErrNotController, kerr.NotController},
	{controller.ErrClosed, kerr.NotController},
	{metalog.ErrClosed, kerr.NotController},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
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

// maxErrorMessage bounds the error messages of responses: they may quote
// what the client sent (a topic name), and a response must not grow with
// it (a 1 MiB name once per partition of a produce made a 2 GB response).
const maxErrorMessage = 512

// errorMessage returns err's text for the error message fields of newer
// versions, or nil, cut to maxErrorMessage bytes.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	msg := truncate(err.Error(), maxErrorMessage)
	return &msg
}

// truncate cuts s to at most n bytes, marking the cut, at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
