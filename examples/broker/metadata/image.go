package metadata

import (
	"maps"
	"slices"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/sasl"
)

// NoLeader is the leader of an offline partition: no unfenced replica of
// its ISR is left (Kafka's -1).
const NoLeader int32 = -1

// TopicID is a topic's 16-byte id (Kafka's Uuid).
type TopicID [16]byte

// Broker is a broker's registration: the epoch of its latest registration
// (the log index that committed it: a restarted broker gets a new one), and
// whether it is fenced (its session expired, or it never registered since
// the controller fenced it).
type Broker struct {
	ID     int32
	Epoch  int64
	Fenced bool
}

// Partition is one partition's replica placement and leadership.
type Partition struct {
	Replicas []int32 // Replicas[0] is the preferred leader
	ISR      []int32 // in replica order; never empty
	Leader   int32   // NoLeader when offline
	// LeaderEpoch is bumped each time the leader changes.
	LeaderEpoch int32
	// PartitionEpoch is bumped on every change (leader or ISR); an ISR
	// change is accepted only against the current one.
	PartitionEpoch int32
	// AddingReplicas and RemovingReplicas are a reassignment's in flight
	// (KIP-455, Kafka's PartitionRecord fields of those names): Replicas
	// is then the target's replicas followed by those being removed, and
	// both are empty when none runs (reassign.go). Absent from records
	// written before reassignments, they decode empty.
	AddingReplicas   []int32 `json:",omitempty"`
	RemovingReplicas []int32 `json:",omitempty"`
}

// Offline reports whether the partition has no leader.
func (p Partition) Offline() bool { return p.Leader == NoLeader }

// InISR reports whether broker is in the partition's ISR.
func (p Partition) InISR(broker int32) bool { return slices.Contains(p.ISR, broker) }

// clone returns a deep copy of p.
func (p Partition) clone() Partition {
	p.Replicas, p.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
	p.AddingReplicas, p.RemovingReplicas = slices.Clone(p.AddingReplicas), slices.Clone(p.RemovingReplicas)
	return p
}

// Topic is a topic: its id, its own configs as set at creation or since
// by AlterConfigs or IncrementalAlterConfigs (the ones it lacks take the
// brokers' defaults), its replication factor and partitions, indexed by
// number.
type Topic struct {
	Name              string
	ID                TopicID
	ReplicationFactor int16
	Configs           map[string]string
	Partitions        []Partition
}

func (t *Topic) clone() *Topic {
	c := *t
	c.Configs = maps.Clone(t.Configs)
	c.Partitions = make([]Partition, len(t.Partitions))
	for i, p := range t.Partitions {
		c.Partitions[i] = p.clone()
	}
	return &c
}

// Image is the cluster's metadata at one point of the log. It is
// immutable: Apply returns a new one. Its maps and slices must not be
// written by callers.
type Image struct {
	// Index is the log index of the last record applied (0: none).
	Index     uint64
	ClusterID string
	brokers   map[int32]Broker
	topics    map[TopicID]*Topic
	names     map[string]TopicID
	// scram are the users' SCRAM credentials (scram.go), shared with the
	// images before until a record changes them.
	scram map[scramKey]sasl.Credential
	// endpoints are the brokers' listeners (endpoints.go), shared as
	// scram is.
	endpoints map[int32][]Endpoint
	// acls are the ACL bindings (acl.go), shared likewise.
	acls map[acl.Binding]struct{}
	// quotas are the client quotas (quota.go), by entity and key,
	// shared likewise.
	quotas map[QuotaEntity]map[string]float64
	// configs are the broker and group resources' configs
	// (resource_configs.go), shared likewise.
	configs map[ConfigResource]map[string]string
}

// Empty returns the image before any record.
func Empty() *Image {
	return &Image{brokers: map[int32]Broker{}, topics: map[TopicID]*Topic{}, names: map[string]TopicID{}}
}

// Broker returns broker id's registration; ok is false if it never
// registered.
func (im *Image) Broker(id int32) (b Broker, ok bool) {
	b, ok = im.brokers[id]
	return b, ok
}

// Brokers returns every registered broker, by id.
func (im *Image) Brokers() []Broker {
	out := slices.Collect(maps.Values(im.brokers))
	slices.SortFunc(out, func(a, b Broker) int { return int(a.ID) - int(b.ID) })
	return out
}

// Fenced reports whether broker id is fenced. A broker that never
// registered is not: the controller gives every broker of the cluster a
// session when it takes office, and fences those that do not heartbeat.
func (im *Image) Fenced(id int32) bool { return im.brokers[id].Fenced }

// Topic returns the topic named name.
func (im *Image) Topic(name string) (*Topic, error) {
	id, ok := im.names[name]
	if !ok {
		return nil, ErrUnknownTopic
	}
	return im.topics[id], nil
}

// TopicByID returns the topic with id.
func (im *Image) TopicByID(id TopicID) (*Topic, error) {
	t, ok := im.topics[id]
	if !ok {
		return nil, ErrUnknownTopic
	}
	return t, nil
}

// Partition returns partition index of topic id.
func (im *Image) Partition(id TopicID, index int32) (Partition, error) {
	t, err := im.TopicByID(id)
	if err != nil {
		return Partition{}, err
	}
	if index < 0 || int(index) >= len(t.Partitions) {
		return Partition{}, ErrUnknownPartition
	}
	return t.Partitions[index], nil
}

// Topics returns every topic, by name.
func (im *Image) Topics() []*Topic {
	out := slices.Collect(maps.Values(im.topics))
	slices.SortFunc(out, func(a, b *Topic) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// TopicCount returns how many topics the image holds.
func (im *Image) TopicCount() int { return len(im.topics) }

// clone returns a shallow copy whose maps can be written: topics are
// shared until copied by the writer (copy on write).
func (im *Image) clone() *Image {
	return &Image{Index: im.Index, ClusterID: im.ClusterID, brokers: maps.Clone(im.brokers),
		topics: maps.Clone(im.topics), names: maps.Clone(im.names), scram: im.scram,
		endpoints: im.endpoints, acls: im.acls, quotas: im.quotas, configs: im.configs}
}
