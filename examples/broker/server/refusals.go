package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// The reasons the broker's handlers refuse a client, counted with the
// network layer's own (max_connections, request_too_large, slow_request,
// malformed_request...: package kafkanet) in broker_refusals_total by
// reason, and logged at most once a minute per client host and reason.
const (
	refuseInvalidString  = "invalid_string"  // a name or id past Kafka's limits: answered with an error code
	refuseCorruptBatch   = "corrupt_batch"   // CORRUPT_MESSAGE
	refuseInvalidRecord  = "invalid_record"  // INVALID_RECORD
	refuseBatchTooLarge  = "batch_too_large" // MESSAGE_TOO_LARGE, inflated size included
	refusePartitionLimit = "partition_limit" // a topic creation past max.broker.partitions: POLICY_VIOLATION
)

// refusalReasons maps the storage's refusals of a client's data to their
// reasons.
var refusalReasons = []struct {
	err    error
	reason string
}{
	{storage.ErrCorruptBatch, refuseCorruptBatch},
	{storage.ErrInvalidRecord, refuseInvalidRecord},
	{storage.ErrBatchTooLarge, refuseBatchTooLarge},
	{storage.ErrPartitionLimit, refusePartitionLimit},
}

// refuseData counts and logs err, a storage error answered to r's client,
// if it refuses the client's data (see refusalReasons); other errors are
// not refusals.
func refuseData(r *kafkanet.Request, err error) {
	for _, m := range refusalReasons {
		if errors.Is(err, m.err) {
			r.Refuse(m.reason, zap.String("client_id", r.ClientID),
				zap.String("api", kmsg.NameForKey(r.Msg.Key())), zap.String("error", truncate(err.Error(), maxErrorMessage)))
			return
		}
	}
}
