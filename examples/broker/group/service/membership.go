package service

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/group/records"
	"github.com/gopurgatory/purgatory/examples/broker/internal/groupstore"
	"github.com/gopurgatory/purgatory/examples/broker/sharegroup"
)

// membershipStore is the Store of a coordinator that computes its groups'
// assignments (KIP-848's consumer groups, KIP-932's share groups): each
// change of a group is a batch of its records (encode: records.ConsumerGroup
// or records.ShareGroup, this broker's own format) appended to the group's
// partition of __consumer_offsets through the runtime, beside the classic
// groups' and the offsets, and compacted with them. Every change waits,
// as Kafka's runtime appends a heartbeat's records with acks=-1, until
// the high watermark passes it; the coordinator drops the wait of those
// nobody waits for.
type membershipStore[G, M any] struct {
	topic  func() *coordinator.Topic
	encode func(groupstore.Change[G, M]) []kmsg.Record
}

var (
	_ consumergroup.Store = membershipStore[consumergroup.StoredGroup, consumergroup.StoredMember]{}
	_ sharegroup.Store    = membershipStore[sharegroup.StoredGroup, sharegroup.StoredMember]{}
)

// ConsumerStore returns the store of the KIP-848 coordinator's groups in
// the offsets topic that topic returns: the one New hosts, set before any
// group's change (the broker builds the KIP-848 coordinator before it
// hosts the group coordinator, whose unloads and loads it follows).
func ConsumerStore(topic func() *coordinator.Topic) consumergroup.Store {
	return membershipStore[consumergroup.StoredGroup, consumergroup.StoredMember]{topic, records.ConsumerGroup}
}

// ShareStore returns the store of the share groups' membership (package
// sharegroup) in the offsets topic that topic returns, as ConsumerStore.
func ShareStore(topic func() *coordinator.Topic) sharegroup.Store {
	return membershipStore[sharegroup.StoredGroup, sharegroup.StoredMember]{topic, records.ShareGroup}
}

// Append appends ch's records as one batch to its group's partition and
// returns the wait for their replication. A partition not led here is
// NOT_COORDINATOR.
func (s membershipStore[G, M]) Append(ch groupstore.Change[G, M]) (groupstore.Pending, error) {
	wait, err := s.topic().Append(ch.Group, records.Batch(time.Now(), s.encode(ch)), false)
	if err != nil {
		return nil, err
	}
	return groupstore.Pending(wait), nil
}
