package metadata

import (
	"encoding/json"
	"fmt"
)

// Record is one entry of the metadata log: what one decision of the
// controller changes, applied as a whole (KRaft writes such a decision as
// a batch of records, atomically). Its parts are applied in field order:
// the cluster id, the brokers, the deleted topics, the created topics,
// the partitions added, the topics' own configs, the broker and group
// configs, the partition changes,
// the SCRAM credentials, the endpoints, the ACL bindings, the client
// quotas. A field added since an older record was written is absent from
// it, and decodes empty.
type Record struct {
	// ClusterID sets the cluster's id, once: the first one committed wins.
	ClusterID string `json:"cluster_id,omitempty"`
	// Brokers are brokers' new registrations (a registration, a fencing,
	// an unfencing): each replaces the broker's entry.
	Brokers []Broker `json:"brokers,omitempty"`
	// DeleteTopics removes topics by id.
	DeleteTopics []TopicID `json:"delete_topics,omitempty"`
	// CreateTopics adds topics, with their partitions' first state.
	CreateTopics []*Topic `json:"create_topics,omitempty"`
	// AddPartitions adds partitions to topics (CreatePartitions), after
	// their last.
	AddPartitions []NewPartitions `json:"add_partitions,omitempty"`
	// TopicConfigs sets topics' own configs (AlterConfigs,
	// IncrementalAlterConfigs), each replacing the topic's.
	TopicConfigs []TopicConfigs `json:"topic_configs,omitempty"`
	// Configs sets broker and group resources' configs (AlterConfigs,
	// IncrementalAlterConfigs), each replacing the resource's
	// (resource_configs.go).
	Configs []ResourceConfigs `json:"configs,omitempty"`
	// Partitions are partitions' new states (leader, ISR, epochs).
	Partitions []PartitionChange `json:"partitions,omitempty"`
	// Scram sets and removes users' SCRAM credentials.
	Scram []ScramChange `json:"scram,omitempty"`
	// Endpoints sets brokers' endpoints (BrokerRegistration's listeners).
	Endpoints []BrokerEndpoints `json:"endpoints,omitempty"`
	// ACLs adds and removes ACL bindings, in order.
	ACLs []ACLChange `json:"acls,omitempty"`
	// Quotas sets and removes client quotas, in order (quota.go).
	Quotas []QuotaChange `json:"quotas,omitempty"`
}

// PartitionChange is a partition's new state.
type PartitionChange struct {
	Topic     TopicID `json:"topic"`
	Index     int32   `json:"index"`
	Partition Partition
}

// Empty reports whether r changes nothing.
func (r Record) Empty() bool {
	return r.ClusterID == "" && len(r.Brokers) == 0 && len(r.DeleteTopics) == 0 &&
		len(r.CreateTopics) == 0 && len(r.AddPartitions) == 0 && len(r.Partitions) == 0 && len(r.Scram) == 0 &&
		len(r.TopicConfigs) == 0 && len(r.Configs) == 0 &&
		len(r.Endpoints) == 0 && len(r.ACLs) == 0 && len(r.Quotas) == 0
}

// Encode returns r as the bytes of a log entry.
func (r *Record) Encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		// Plain data, and ACL bindings the controller validated: a
		// failure is a programmer's error.
		panic(fmt.Sprintf("metadata: encoding a record: %v", err))
	}
	return b
}

// DecodeRecord reads a log entry written by Encode.
func DecodeRecord(b []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("metadata: decoding a record: %w", err)
	}
	return &r, nil
}

// Apply returns the image after r, committed at log index index. It never
// fails: a part that no longer applies (a change to a topic deleted
// meanwhile, a topic created twice) is skipped, so that every broker
// skips it alike. O(size of r), plus copying the topics it changes.
func (im *Image) Apply(index uint64, r *Record) *Image {
	next := im.clone()
	next.Index = index
	if next.ClusterID == "" {
		next.ClusterID = r.ClusterID
	}
	for _, b := range r.Brokers {
		next.brokers[b.ID] = b
	}
	for _, id := range r.DeleteTopics {
		if t, ok := next.topics[id]; ok {
			delete(next.names, t.Name)
			delete(next.topics, id)
		}
	}
	for _, t := range r.CreateTopics {
		if _, taken := next.names[t.Name]; taken {
			continue
		}
		if _, taken := next.topics[t.ID]; taken {
			continue
		}
		next.topics[t.ID] = t.clone()
		next.names[t.Name] = t.ID
	}
	copied := make(map[TopicID]bool)
	for _, np := range r.AddPartitions {
		next.addPartitions(np, copied)
	}
	for _, tc := range r.TopicConfigs {
		next.setTopicConfigs(tc, copied)
	}
	next.applyConfigs(r.Configs)
	for _, c := range r.Partitions {
		t, ok := next.topics[c.Topic]
		if !ok || c.Index < 0 || int(c.Index) >= len(t.Partitions) {
			continue
		}
		if !copied[c.Topic] {
			t = t.clone()
			next.topics[c.Topic] = t
			copied[c.Topic] = true
		}
		t.Partitions[c.Index] = c.Partition.clone()
	}
	next.applyScram(r.Scram)
	next.applyEndpoints(r.Endpoints)
	next.applyACLs(r.ACLs)
	next.applyQuotas(r.Quotas)
	return next
}

// snapshot is an image as written to a snapshot.
type snapshot struct {
	Index     uint64            `json:"index"`
	ClusterID string            `json:"cluster_id"`
	Brokers   []Broker          `json:"brokers"`
	Topics    []*Topic          `json:"topics"`
	Scram     []ScramChange     `json:"scram,omitempty"`
	Endpoints []BrokerEndpoints `json:"endpoints,omitempty"`
	ACLs      []ACLChange       `json:"acls,omitempty"`
	Quotas    []QuotaChange     `json:"quotas,omitempty"`
	Configs   []ResourceConfigs `json:"configs,omitempty"`
}

// MarshalImage returns im as the bytes of a snapshot.
func MarshalImage(im *Image) ([]byte, error) {
	return json.Marshal(snapshot{Index: im.Index, ClusterID: im.ClusterID, Brokers: im.Brokers(), Topics: im.Topics(),
		Scram: im.scramEntries(), Endpoints: im.endpointEntries(), ACLs: im.aclEntries(), Quotas: im.QuotaChanges(),
		Configs: im.ConfigEntries()})
}

// UnmarshalImage reads a snapshot written by MarshalImage.
func UnmarshalImage(b []byte) (*Image, error) {
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("metadata: decoding a snapshot: %w", err)
	}
	im := Empty()
	im.Index, im.ClusterID = s.Index, s.ClusterID
	for _, b := range s.Brokers {
		im.brokers[b.ID] = b
	}
	for _, t := range s.Topics {
		im.topics[t.ID] = t
		im.names[t.Name] = t.ID
	}
	im.applyScram(s.Scram)
	im.applyEndpoints(s.Endpoints)
	im.applyACLs(s.ACLs)
	im.applyQuotas(s.Quotas)
	im.applyConfigs(s.Configs)
	return im, nil
}
