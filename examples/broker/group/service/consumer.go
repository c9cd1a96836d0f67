package service

import (
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/group/records"
)

// consumerStore is the KIP-848 coordinator's Store: each change of a
// consumer group is a batch of its records (records.ConsumerGroup, this
// broker's own format) appended to the group's partition of
// __consumer_offsets through the runtime, beside the classic groups' and
// the offsets, and compacted with them. Every change waits, as Kafka's
// runtime appends a heartbeat's records with acks=-1, until the high
// watermark passes it; the coordinator drops the wait of those nobody
// waits for.
type consumerStore struct{ topic func() *coordinator.Topic }

var _ consumergroup.Store = consumerStore{}

// ConsumerStore returns the store of the KIP-848 coordinator's groups in
// the offsets topic that topic returns: the one New hosts, set before any
// group's change (the broker builds the KIP-848 coordinator before it
// hosts the group coordinator, whose unloads and loads it follows).
func ConsumerStore(topic func() *coordinator.Topic) consumergroup.Store {
	return consumerStore{topic}
}

// Append appends ch's records as one batch to its group's partition and
// returns the wait for their replication. A partition not led here is
// NOT_COORDINATOR.
func (s consumerStore) Append(ch consumergroup.Change) (consumergroup.Pending, error) {
	wait, err := s.topic().Append(ch.Group, records.Batch(time.Now(), records.ConsumerGroup(ch)), false)
	if err != nil {
		return nil, err
	}
	return consumergroup.Pending(wait), nil
}
