package upstream

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic is an upstream topic as the latest metadata describes it.
type Topic struct {
	Name       string
	ID         [16]byte // zero before Kafka 2.8 (metadata v10)
	Internal   bool
	Partitions []Partition // by partition index
}

// Partition is one partition's leadership.
type Partition struct {
	Leader      int32 // -1 when it has none
	LeaderEpoch int32 // -1 when unknown
	ErrorCode   int16 // LEADER_NOT_AVAILABLE, say
}

// REQUIRES: cl.mu held.
func (cl *Cluster) setTopicLocked(rt *kmsg.MetadataResponseTopic, version int16) {
	t := &Topic{Name: *rt.Topic, ID: rt.TopicID, Internal: rt.IsInternal}
	n := 0
	for _, p := range rt.Partitions {
		n = max(n, int(p.Partition)+1)
	}
	t.Partitions = make([]Partition, n)
	for i := range t.Partitions {
		t.Partitions[i] = Partition{Leader: -1, LeaderEpoch: -1}
	}
	old := cl.topics[t.Name]
	for _, p := range rt.Partitions {
		if p.Partition < 0 {
			continue
		}
		np := Partition{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ErrorCode: p.ErrorCode}
		if version < 7 && old != nil && int(p.Partition) < len(old.Partitions) && old.Partitions[p.Partition].Leader == p.Leader {
			// Metadata before v7 has no leader epochs: a client's old
			// request must not erase what a newer one said.
			np.LeaderEpoch = old.Partitions[p.Partition].LeaderEpoch
		}
		t.Partitions[p.Partition] = np
	}
	if old != nil && version < 10 {
		t.ID = old.ID // nor its topic id (v10+)
	}
	if old != nil && old.ID != t.ID {
		delete(cl.names, old.ID) // recreated under the same name
	}
	cl.topics[t.Name] = t
	if t.ID != ([16]byte{}) {
		cl.names[t.ID] = t.Name
	}
}

// REQUIRES: cl.mu held.
func (cl *Cluster) dropTopicLocked(name string) {
	if t := cl.topics[name]; t != nil {
		delete(cl.names, t.ID)
		delete(cl.topics, name)
	}
}

// Leader returns the leader of a partition and its leader epoch; ok is
// false when the metadata knows no leader for it.
func (cl *Cluster) Leader(topic string, partition int32) (leader, epoch int32, ok bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	t := cl.topics[topic]
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return -1, -1, false
	}
	p := t.Partitions[partition]
	_, known := cl.brokers[p.Leader]
	return p.Leader, p.LeaderEpoch, p.Leader >= 0 && known
}

// TopicID returns the id of a topic, zero when unknown.
func (cl *Cluster) TopicID(name string) ([16]byte, bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	t := cl.topics[name]
	if t == nil {
		return [16]byte{}, false
	}
	return t.ID, true
}

// TopicName returns the name of the topic with id.
func (cl *Cluster) TopicName(id [16]byte) (string, bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	n, ok := cl.names[id]
	return n, ok
}
