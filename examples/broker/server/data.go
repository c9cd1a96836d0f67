package server

import (
	"crypto/rand"
	"encoding/base64"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// data is the broker's data path: the topics and their partitions' logs,
// the producer ids handed out, and the cluster's id.
type data struct {
	store       *storage.Store
	clusterID   string       // immutable
	producerIDs *producerIDs // what InitProducerId hands out
}

// newData opens the store: in memory, or on the log dir of dur, whose
// topics it loads and whose partitions it recovers (a partition that
// cannot be recovered fails it, and the broker does not start). Topic
// creations that would take it past maxPartitions are refused.
func newData(cfg Config, log *zap.Logger, dur *durable, maxPartitions int32) (*data, error) {
	// Kafka's defaults for the configs the broker has no log.* setting
	// of (the compaction configs), the broker's for the others; the
	// dynamic broker configs replace them once the metadata log is
	// applied (broker_configs.go).
	defaults := staticTopicDefaults(cfg)
	opts := []storage.Option{
		storage.WithLogger(log),
		storage.WithTopicDefaults(defaults),
		storage.WithRetentionCheckInterval(cfg.LogRetentionCheck),
		storage.WithCleanerInterval(cfg.LogCleanerBackoff),
		storage.WithProducerState(cfg.MaxIdempotentInFlight, cfg.TransactionalIDExpiry),
		storage.WithMaxPartitions(int(maxPartitions)),
		// The offsets topic is created on a group's first use: its
		// partitions are kept for it, so that clients' topics cannot
		// take them all first (no consumer group could work after).
		// __transaction_state's are not: with both kept, a broker under
		// a small file limit (max.broker.partitions 84 at 512 files)
		// would have none left for clients; past the budget, its
		// creation is refused and logged, and transactional ids are
		// COORDINATOR_NOT_AVAILABLE.
		storage.WithReservedPartitions(coordinator.OffsetsTopic, int(cfg.OffsetsTopicPartitions)),
		storage.WithInflateLimit(int(cfg.SocketRequestMaxBytes)),
	}
	d := &data{clusterID: newClusterID(), producerIDs: &producerIDs{}}
	if cfg.Cluster != "" {
		d.producerIDs.base = int64(cfg.NodeID) << cluster.ProducerIDShift
	}
	if dur != nil {
		opts = append(opts, storage.WithLogOpener(dur.dir.OpenLog), storage.WithCatalog(dur.dir))
		d.clusterID, d.producerIDs.reserve = dur.dir.ClusterID(), dur.dir.ReserveProducerIDs
	}
	var err error
	if d.store, err = storage.New(opts...); err != nil {
		return nil, err
	}
	return d, nil
}

// close stops the retention sweeper and the log cleaner, and closes the logs. The broker calls
// it last: until every waiting fetch is answered, they read the logs.
func (d *data) close() error { return d.store.Close() }

// newClusterID returns a random id printed as Kafka prints its cluster ids
// (a UUID in unpadded URL-safe base64).
func newClusterID() string {
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(id[:])
}
