package coordinator

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
)

// A Shard is a coordinator the runtime hosts (Kafka's CoordinatorShard):
// a state machine whose state of each partition of its topic is replayed
// from the partition's records, and handed to it when this broker comes to
// lead the partition. The group coordinator is one (package group, hosted
// by package group/service); the transaction and share coordinators
// (packages txn and sharestate) are others, each with a topic of its own.
type Shard interface {
	// NewState returns an empty state, to replay a partition into.
	NewState() State
	// Load hands the shard the state of partition idx, replayed to its
	// log end, which this broker leads at leader epoch epoch: the shard
	// now owns its keys. The epoch tells this coordinator from the
	// partition's earlier and later ones (the transaction coordinator
	// writes it into its markers as their coordinator epoch). It returns
	// how many keys it loaded; an error (the shard is closing) leaves the
	// partition unloaded.
	Load(idx, epoch int32, st State) (int, error)
	// Unload has the shard forget the keys of partition idx (those
	// inPartition says are) and answer what waits on them, so that
	// clients find the new coordinator; it returns how many it forgot.
	// It is called with the topic's lock held.
	Unload(idx int32, inPartition func(key string) bool) int
}

// State is a shard's state of one partition (records.Replay for groups):
// it follows the partition's records, and writes its live ones again for
// the compaction (compaction.go).
type State interface {
	// Apply applies a batch of the partition's records, and returns the
	// offset after it.
	Apply(batch []byte) (next int64, err error)
	// Records returns how many records it has applied, Live how many of
	// them are their key's latest value.
	Records() int64
	Live() int64
	// Rewrite returns the live records, in batches of at most maxRecords
	// records and about maxBytes bytes, timestamped now.
	Rewrite(now time.Time, maxRecords, maxBytes int) [][]byte
}

// Config is what a Runtime is made of.
type Config struct {
	Replicas *replica.Manager // appends, the high watermark, leadership
	Member   *cluster.Member  // the image, this broker's registration
	// CreateTopic creates a state topic through the active controller,
	// or asks it to (an error then, LEADER_NOT_AVAILABLE, until the
	// metadata log brings it).
	CreateTopic func(name string, partitions int32, rf int16, configs map[string]string) error
	Logger      *zap.Logger
}

// Runtime hosts coordinators' state on the partitions of their internal
// topics, as Kafka 4's CoordinatorRuntime does: each coordinator (a Shard)
// on its own topic (Host), each key in one partition of it
// (PartitionFor), coordinated by the broker that leads that partition.
type Runtime struct {
	cfg    Config // immutable
	rm     *replica.Manager
	member *cluster.Member
	log    *zap.Logger

	// topics is filled by Host before the metadata log opens, and only
	// read afterwards.
	topics map[string]*Topic
}

// New returns a runtime hosting nothing yet.
func New(cfg Config) *Runtime {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Runtime{cfg: cfg, rm: cfg.Replicas, member: cfg.Member, log: cfg.Logger, topics: make(map[string]*Topic)}
}

// Host hosts a coordinator on the topic spec describes: newShard makes the
// shard, given the topic (whose Owns and Append the shard uses). Call it
// before the metadata log opens (cluster.Member.Open): the runtime follows
// the log from its first record.
func (rt *Runtime) Host(spec TopicSpec, newShard func(t *Topic) (Shard, error)) (*Topic, error) {
	if _, dup := rt.topics[spec.Name]; dup {
		return nil, fmt.Errorf("coordinator: %s hosted twice", spec.Name)
	}
	t := &Topic{rt: rt, spec: spec, states: make(map[int32]*partitionState), compactor: newCompactor()}
	t.owned.Store(&ownedPartitions{})
	shard, err := newShard(t)
	if err != nil {
		return nil, err
	}
	t.shard = shard
	rt.topics[spec.Name] = t
	return t, nil
}

// Topic returns the state topic named name, or nil if no coordinator is
// hosted on it.
func (rt *Runtime) Topic(name string) *Topic { return rt.topics[name] }

// Follow makes the partitions loaded here those that im says this broker
// leads, for every topic hosted. It runs on the metadata log's apply
// goroutine, for every record applied: O(partitions of the state topics).
func (rt *Runtime) Follow(im *metadata.Image) {
	for _, t := range rt.topics {
		t.follow(im)
	}
}

// Wait waits for the loads under way; the metadata log is closed, so no
// new one starts.
func (rt *Runtime) Wait() {
	for _, t := range rt.topics {
		t.wg.Wait()
	}
}
