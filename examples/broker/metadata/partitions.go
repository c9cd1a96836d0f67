package metadata

import (
	"fmt"
	"slices"
)

// NewPartitions is partitions added to a topic (Kafka's CreatePartitions):
// they follow its last, numbered from From, which is the topic's count
// when the controller decided. An entry whose topic no longer has From
// partitions when it is applied (deleted, or grown by another record
// meanwhile) is skipped, alike on every broker.
type NewPartitions struct {
	Topic      TopicID     `json:"topic"`
	From       int32       `json:"from"`
	Partitions []Partition `json:"partitions"`
}

// AddPartitions returns what grows topic name of im to count partitions:
// the new ones placed on brokers (the cluster's ids, ascending) as Place
// places a topic's, so that a topic grown has the partitions it would
// have had if created with them; their replication factor is the
// topic's. An assignment, if not nil, gives the new partitions' replicas
// in order, and must be exactly that placement, the placement of this
// broker being fixed. It fails with ErrUnknownTopic, ErrInvalidPartitions
// (count not above the topic's; Kafka's messages),
// ErrInvalidReplicaAssignment or ErrNoBrokers. O(count - partitions).
func AddPartitions(im *Image, brokers []int32, name string, count int32, assignment [][]int32) (NewPartitions, error) {
	t, err := im.Topic(name)
	if err != nil {
		return NewPartitions{}, err
	}
	have := int32(len(t.Partitions))
	switch {
	case count == have:
		return NewPartitions{}, kafkaErrorf(ErrInvalidPartitions, "Topic already has %d partition(s).", have)
	case count < have:
		return NewPartitions{}, kafkaErrorf(ErrInvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.",
			name, have, count)
	case int(t.ReplicationFactor) > len(brokers) || t.ReplicationFactor < 1:
		return NewPartitions{}, fmt.Errorf("%w: replication factor %d on %d broker(s)", ErrNoBrokers, t.ReplicationFactor, len(brokers))
	}
	add := count - have
	if assignment != nil && len(assignment) != int(add) {
		return NewPartitions{}, kafkaErrorf(ErrInvalidReplicaAssignment,
			"Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", add, len(assignment))
	}
	np := NewPartitions{Topic: t.ID, From: have, Partitions: make([]Partition, add)}
	for i := range np.Partitions {
		index := int(have) + i
		np.Partitions[i] = placePartition(im, brokers, index, t.ReplicationFactor)
		if assignment == nil {
			continue
		}
		want, got := np.Partitions[i].Replicas, assignment[i]
		switch {
		case len(got) != len(want):
			return NewPartitions{}, kafkaErrorf(ErrInvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), "+
				"but this is not consistent with previous partitions, which have %d replica(s).", len(got), len(want))
		case !slices.Equal(got, want):
			return NewPartitions{}, fmt.Errorf("%w: partition %d on brokers %v, but this cluster places it on %v",
				ErrInvalidReplicaAssignment, index, got, want)
		}
	}
	return np, nil
}

// addPartitions applies np to im, a clone being built by Apply, copying
// the topic first unless copied says it was already.
func (im *Image) addPartitions(np NewPartitions, copied map[TopicID]bool) {
	t, ok := im.topics[np.Topic]
	if !ok || int32(len(t.Partitions)) != np.From {
		return
	}
	if !copied[np.Topic] {
		t = t.clone()
		im.topics[np.Topic] = t
		copied[np.Topic] = true
	}
	for _, p := range np.Partitions {
		t.Partitions = append(t.Partitions, p.clone())
	}
}
