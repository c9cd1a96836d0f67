package txn

import (
	"fmt"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
)

// Kafka's defaults for __transaction_state.
const (
	DefaultPartitions        = 50               // transaction.state.log.num.partitions
	DefaultReplicationFactor = 3                // transaction.state.log.replication.factor
	DefaultMinISR            = 2                // transaction.state.log.min.isr
	DefaultAppendTimeout     = 30 * time.Second // request.timeout.ms, which Kafka's appends of the log wait for
)

// ServiceConfig is how __transaction_state is kept. A field left zero
// takes Kafka's default.
type ServiceConfig struct {
	Partitions        int32 // transaction.state.log.num.partitions
	ReplicationFactor int16 // transaction.state.log.replication.factor, capped at the cluster's size
	MinISR            int16 // transaction.state.log.min.isr, capped at the replication factor
	// AppendTimeout bounds a write's wait for its replication:
	// COORDINATOR_NOT_AVAILABLE past it, which clients retry.
	AppendTimeout time.Duration
	// CompactionDeadRecords is how many dead records (overwritten values,
	// tombstones) a partition holds at least before its leader rewrites
	// the live ones and drops the rest, once they also outnumber the live
	// (the runtime's compaction).
	CompactionDeadRecords int64
}

// topicConfigs are __transaction_state's own configs: no retention, as
// the offsets topic's (Kafka compacts it by key; here the runtime's
// compaction rewrites the live records), and no unclean leader election,
// which Kafka forces for it: a transaction's state must not go back.
// defaultSpec holds the defaults of a ServiceConfig's zero fields.
var defaultSpec = coordinator.TopicSpec{Partitions: DefaultPartitions, ReplicationFactor: DefaultReplicationFactor,
	MinInsyncReplicas: DefaultMinISR, AppendTimeout: DefaultAppendTimeout}

var topicConfigs = map[string]string{"retention.ms": "-1", "retention.bytes": "-1",
	"unclean.leader.election.enable": "false"}

// Host hosts a transaction coordinator on rt's __transaction_state, as
// Kafka 4 hosts its TransactionCoordinator's state: it returns the
// coordinator, which keeps each transactional id in its partition of the
// topic (coordinator.PartitionFor) and coordinates the ids of the
// partitions this broker leads and has loaded, and the topic, whose
// KeyError routes the requests (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS) and whose Ensure creates it
// (FindCoordinator). Every write waits for its replication with
// min.insync.replicas enforced (Topic.Append with minISR), as Kafka
// appends the log with acks=-1. Call it before the metadata log opens.
func Host(rt *coordinator.Runtime, scfg ServiceConfig, cfg Config) (*Coordinator, *coordinator.Topic, error) {
	spec, err := coordinator.TopicSpec{Name: coordinator.TransactionTopic, Partitions: scfg.Partitions,
		ReplicationFactor: scfg.ReplicationFactor, MinInsyncReplicas: scfg.MinISR, Configs: topicConfigs,
		AppendTimeout: scfg.AppendTimeout, CompactionDeadRecords: scfg.CompactionDeadRecords}.WithDefaults(defaultSpec)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	var c *Coordinator
	t, err := rt.Host(spec, func(t *coordinator.Topic) (coordinator.Shard, error) {
		var err error
		if c, err = New(t, cfg); err != nil {
			return nil, err
		}
		return shard{c}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c, t, nil
}

// shard is the coordinator as the runtime hosts it.
type shard struct{ c *Coordinator }

var (
	_ coordinator.Shard = shard{}
	_ coordinator.State = (*Replay)(nil)
	_ Log               = (*coordinator.Topic)(nil)
)

// NewState returns an empty replay of a __transaction_state partition.
func (shard) NewState() coordinator.State { return &Replay{} }

// Load brings back the ids of a partition just led, at leader epoch
// epoch (Coordinator.Load).
func (s shard) Load(idx, epoch int32, st coordinator.State) (int, error) {
	return s.c.Load(idx, epoch, st.(*Replay))
}

// Unload forgets the ids of a partition no longer led here
// (Coordinator.Unload).
func (s shard) Unload(idx int32, inPartition func(string) bool) int {
	return s.c.Unload(idx, inPartition)
}
