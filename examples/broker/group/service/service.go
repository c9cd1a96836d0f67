package service

import (
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/group/records"
	"github.com/gopurgatory/purgatory/examples/broker/sharegroup"
)

// Config is how the offsets topic is kept.
type Config struct {
	Partitions        int32         // offsets.topic.num.partitions
	ReplicationFactor int16         // offsets.topic.replication.factor, capped at the cluster's size
	CommitTimeout     time.Duration // offsets.commit.timeout.ms: a commit's wait for its replication
	// CompactionDeadRecords is how many dead records (offsets
	// overwritten or deleted, groups deleted) an offsets partition holds
	// at least before its leader rewrites the live ones and drops the
	// rest, once they also outnumber the live
	// (offsets.topic.compaction.dead.records).
	CompactionDeadRecords int64
	// OnUnload, if set, is told each partition unloaded, after the
	// group coordinator: the KIP-848 and share group coordinators forget
	// their groups there too, since the partition's new leader
	// coordinates them.
	OnUnload func(inPartition func(group string) bool)
	// OnLoad, if set, is handed the KIP-848 consumer groups of each
	// partition loaded (records.Replay.ConsumerGroups), before the group
	// coordinator its classic groups and offsets: the KIP-848 coordinator
	// loads them (consumergroup.Coordinator.Load), so that the offsets
	// of a group with members are held when the classic coordinator
	// arms their expiry.
	OnLoad func(groups []consumergroup.StoredGroup)
	// OnLoadShares, if set, is handed the share groups of each partition
	// loaded (records.Replay.ShareGroups), after OnLoad: the share
	// group coordinator loads them (sharegroup.Coordinator.Load).
	OnLoadShares func(groups []sharegroup.StoredGroup)
}

// topicConfigs are the offsets topic's own configs: no retention, since a
// group's latest commit may be older than any retention and must still be
// there when a new leader loads the partition. Kafka compacts the topic by
// key instead (cleanup.policy compact); here the leader of each partition
// rewrites its live records and moves its log start past the dead ones
// (the runtime's compaction), and followers follow that log start.
var topicConfigs = map[string]string{"retention.ms": "-1", "retention.bytes": "-1"}

// New hosts a group coordinator, made with opts, on rt's
// __consumer_offsets: it returns the coordinator, which stores its
// groups in the topic and coordinates the groups of the partitions this
// broker has loaded, and the topic, which routes the groups' requests
// (Topic.KeyError). Call it before the metadata log opens.
func New(rt *coordinator.Runtime, cfg Config, opts ...group.Option) (*group.Coordinator, *coordinator.Topic, error) {
	var c *group.Coordinator
	spec := coordinator.TopicSpec{Name: coordinator.OffsetsTopic, Partitions: cfg.Partitions,
		ReplicationFactor: cfg.ReplicationFactor, Configs: topicConfigs,
		AppendTimeout: cfg.CommitTimeout, CompactionDeadRecords: cfg.CompactionDeadRecords}
	t, err := rt.Host(spec, func(t *coordinator.Topic) (coordinator.Shard, error) {
		var err error
		opts = append(opts, group.WithOwner(t.Owns), group.WithOffsetStore(store{t}))
		if c, err = group.New(opts...); err != nil {
			return nil, err
		}
		return shard{c, cfg.OnUnload, cfg.OnLoad, cfg.OnLoadShares}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return c, t, nil
}

// shard is the group coordinator as the runtime hosts it.
type shard struct {
	c        *group.Coordinator
	onUnload func(inPartition func(string) bool) // nil: none
	onLoad   func([]consumergroup.StoredGroup)   // nil: none
	onShares func([]sharegroup.StoredGroup)      // nil: none
}

var _ coordinator.Shard = shard{}

// NewState returns an empty replay of an offsets partition.
func (shard) NewState() coordinator.State { return &records.Replay{} }

// Load brings back the groups of a partition just led, replayed: the
// KIP-848 consumer groups first (OnLoad), the share groups
// (OnLoadShares), then the classic ones, each
// with its committed offsets and its last stored metadata, a group with
// members Stable with them (group.Coordinator.Load).
func (s shard) Load(_, _ int32, st coordinator.State) (int, error) {
	r := st.(*records.Replay)
	if s.onLoad != nil {
		s.onLoad(r.ConsumerGroups())
	}
	if s.onShares != nil {
		s.onShares(r.ShareGroups())
	}
	return s.c.Load(r.Groups())
}

// Unload forgets the groups of a partition no longer led here, answering
// their waiting JoinGroups and SyncGroups NOT_COORDINATOR.
func (s shard) Unload(_ int32, inPartition func(string) bool) int {
	n := s.c.Unload(inPartition)
	if s.onUnload != nil {
		s.onUnload(inPartition)
	}
	return n
}
