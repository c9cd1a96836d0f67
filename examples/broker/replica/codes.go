package replica

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

// storageCodes maps the errors of the data path and of what it stands on
// (storage, metadata, controller, metadata log) to the Kafka error codes a
// client acts on, in the order they are checked. The request handlers map
// their own first (package server).
var storageCodes = []struct {
	err  error
	code *kerr.Error
}{
	{storage.ErrCorruptBatch, kerr.CorruptMessage},
	{storage.ErrInvalidRecord, kerr.InvalidRecord},
	{storage.ErrInvalidTxnState, kerr.InvalidTxnState},
	{storage.ErrCoordinatorFenced, kerr.TransactionCoordinatorFenced},
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
	{ErrNotLeader, kerr.NotLeaderForPartition},
	{ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{metadata.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{metadata.ErrUnknownPartition, kerr.UnknownTopicOrPartition},
	{metadata.ErrTopicExists, kerr.TopicAlreadyExists},
	{metadata.ErrNoBrokers, kerr.InvalidReplicationFactor},
	{metadata.ErrInvalidPartitions, kerr.InvalidPartitions},
	{metadata.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{metadata.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress},
	{metadata.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{metadata.ErrInvalidConfig, kerr.InvalidConfig},
	{metadata.ErrInvalidRequest, kerr.InvalidRequest},
	{controller.ErrNotController, kerr.NotController},
	{controller.ErrClosed, kerr.NotController},
	{metalog.ErrClosed, kerr.NotController},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
}

// ErrorCode returns the Kafka error code for err: 0 for nil, the mapped
// code for an error of the data path, the code of a Kafka error it wraps
// (a wait's outcome, AwaitAll), and KAFKA_STORAGE_ERROR for anything
// else, which can only come from the log itself (Kafka's answer to a
// failing disk).
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, m := range storageCodes {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	if code, ok := kafkaCode(err); ok {
		return code
	}
	return kerr.KafkaStorageError.Code
}

// PartitionErrorCode is ErrorCode for a partition a client named by topic
// id (Fetch v13+, Produce v13+): a topic gone is UNKNOWN_TOPIC_ID there,
// which tells the client to refresh its ids.
func PartitionErrorCode(err error, byID bool) int16 {
	if byID && (errors.Is(err, storage.ErrUnknownTopic) || errors.Is(err, storage.ErrDeleted)) {
		return kerr.UnknownTopicID.Code
	}
	return ErrorCode(err)
}

// EpochErrorCode checks a client's current leader epoch against the
// partition's: -1 skips the check, a newer one is UNKNOWN_LEADER_EPOCH (the
// client knows of a leader this broker has not heard of), an older one
// FENCED_LEADER_EPOCH.
func EpochErrorCode(client, partition int32) int16 {
	switch {
	case client < 0:
		return 0
	case client > partition:
		return kerr.UnknownLeaderEpoch.Code
	case client < partition:
		return kerr.FencedLeaderEpoch.Code
	}
	return 0
}

// MaxErrorMessage bounds the error messages of responses: they may quote
// what the client sent (a topic name), and a response must not grow with
// it (a 1 MiB name once per partition of a produce made a 2 GB response).
const MaxErrorMessage = 512

// ErrorMessage returns err's text for the error message fields of newer
// versions, or nil, cut to MaxErrorMessage bytes.
func ErrorMessage(err error) *string {
	if err == nil {
		return nil
	}
	msg := Truncate(err.Error(), MaxErrorMessage)
	return &msg
}

// Truncate cuts s to at most n bytes, marking the cut, at a rune boundary.
func Truncate(s string, n int) string {
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
