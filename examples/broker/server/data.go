package server

import (
	"crypto/rand"
	"encoding/base64"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// data is the broker's data path: the topics and their partitions' logs,
// the producer ids handed out, and the cluster's id.
type data struct {
	store     *storage.Store
	clusterID string // immutable

	// nextProducerID is the id InitProducerId hands out next. In memory,
	// ids restart at 0 with the broker, as the logs do; a durable log
	// will need the block of ids persisted (Kafka's ProducerIdManager),
	// or a restarted broker would hand an id out twice.
	nextProducerID atomic.Int64
}

func newData(cfg Config, log *zap.Logger) (*data, error) {
	store, err := storage.New(
		storage.WithLogger(log),
		storage.WithTopicDefaults(storage.TopicConfig{
			Retention:       cfg.LogRetention,
			RetentionBytes:  cfg.LogRetentionBytes,
			MaxMessageBytes: cfg.MessageMaxBytes,
		}),
		storage.WithRetentionCheckInterval(cfg.LogRetentionCheck),
		storage.WithProducerState(cfg.MaxIdempotentInFlight, cfg.TransactionalIDExpiry),
	)
	if err != nil {
		return nil, err
	}
	return &data{store: store, clusterID: newClusterID()}, nil
}

// close stops the retention sweeper and closes the logs. The broker calls
// it last: until every waiting fetch is answered, they read the logs.
func (d *data) close() error { return d.store.Close() }

// newClusterID returns a random id printed as Kafka prints its cluster ids
// (a UUID in unpadded URL-safe base64).
func newClusterID() string {
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(id[:])
}
