package sharestate

import (
	"fmt"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
)

// Kafka's defaults for __share_group_state.
const (
	DefaultPartitions        = 50               // share.coordinator.state.topic.num.partitions
	DefaultReplicationFactor = 3                // share.coordinator.state.topic.replication.factor
	DefaultMinISR            = 2                // share.coordinator.state.topic.min.isr
	DefaultAppendTimeout     = 30 * time.Second // request.timeout.ms
)

// ServiceConfig is how __share_group_state is kept. A field left zero
// takes Kafka's default.
type ServiceConfig struct {
	Partitions        int32 // share.coordinator.state.topic.num.partitions
	ReplicationFactor int16 // share.coordinator.state.topic.replication.factor, capped at the cluster's size
	MinISR            int16 // share.coordinator.state.topic.min.isr, capped at the replication factor
	// AppendTimeout bounds a write's wait for its replication:
	// REQUEST_TIMED_OUT past it.
	AppendTimeout time.Duration
	// CompactionDeadRecords is how many dead records a partition holds
	// at least before its leader rewrites the live ones (the runtime's
	// compaction; Kafka's topic is compacted by key).
	CompactionDeadRecords int64
}

// topicConfigs are __share_group_state's own configs: Kafka creates it
// compacted, with no retention; here the runtime's compaction rewrites
// the live records. No unclean leader election: a share partition's
// acknowledged records must not come back.
// defaultSpec holds the defaults of a ServiceConfig's zero fields.
var defaultSpec = coordinator.TopicSpec{Partitions: DefaultPartitions, ReplicationFactor: DefaultReplicationFactor,
	MinInsyncReplicas: DefaultMinISR, AppendTimeout: DefaultAppendTimeout}

var topicConfigs = map[string]string{"cleanup.policy": "compact", "retention.ms": "-1", "retention.bytes": "-1",
	"unclean.leader.election.enable": "false"}

// Host hosts a share coordinator on rt's __share_group_state: it returns
// the coordinator, which keeps each share partition's state in the
// topic's partition of its key (Key.String, coordinator.PartitionFor), and
// the topic, whose KeyError routes the share-state RPCs (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS) and whose Ensure creates it
// (FindCoordinator). Call it before the metadata log opens.
func Host(rt *coordinator.Runtime, scfg ServiceConfig, cfg Config) (*Coordinator, *coordinator.Topic, error) {
	spec, err := coordinator.TopicSpec{Name: coordinator.ShareGroupTopic, Partitions: scfg.Partitions,
		ReplicationFactor: scfg.ReplicationFactor, MinInsyncReplicas: scfg.MinISR, Configs: topicConfigs,
		AppendTimeout: scfg.AppendTimeout, CompactionDeadRecords: scfg.CompactionDeadRecords}.WithDefaults(defaultSpec)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	var c *Coordinator
	t, err := rt.Host(spec, func(t *coordinator.Topic) (coordinator.Shard, error) {
		c = New(t, cfg)
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

// NewState returns an empty replay of a __share_group_state partition.
func (shard) NewState() coordinator.State { return &Replay{} }

// Load takes the states of a partition just led (Coordinator.Load).
func (s shard) Load(idx, epoch int32, st coordinator.State) (int, error) {
	return s.c.Load(idx, epoch, st.(*Replay)), nil
}

// Unload forgets the states of a partition no longer led here.
func (s shard) Unload(idx int32, _ func(string) bool) int { return s.c.Unload(idx) }
