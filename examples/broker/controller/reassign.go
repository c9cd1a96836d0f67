package controller

import (
	"context"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// AlterPartitionReassignments starts, changes or cancels the
// reassignments of reqs (Kafka's AlterPartitionReassignments, KIP-455) in
// one record: each is decided by metadata.Reassign against the cluster's
// brokers, and one that completes at once (its target all in sync
// already) is complete when this returns. The rest complete later, in the
// AlterPartition that brings their last target replica into the ISR. It
// returns each partition's result (nil: done, else metadata.Reassign's
// error) and the decision's error: ErrNotController, ErrClosed, the
// log's, which leave every partition as it was. allowRF is KIP-860's
// allow_replication_factor_change.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, reqs []metadata.Reassignment, allowRF bool) ([]error, error) {
	var results []error
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		var rec metadata.Record
		rec, results = metadata.Reassign(im, c.brokers, reqs, allowRF, c.uncleanDefault(im))
		return rec, nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// PartitionReassignment is a reassignment in flight, as
// ListPartitionReassignments answers it.
type PartitionReassignment struct {
	Topic     string
	Index     int32
	Partition metadata.Partition // Replicas, AddingReplicas, RemovingReplicas
}

// ListPartitionReassignments returns the reassignments in flight of
// parts, or of every partition when parts is nil, by topic name then
// partition, from the image this controller decides from (Kafka's
// controller answers from its own state). A partition unknown or not
// being reassigned is left out, as Kafka leaves it. It fails with
// ErrNotController or ErrClosed. O(partitions asked, or all).
func (c *Controller) ListPartitionReassignments(parts []metadata.PartitionRef) ([]PartitionReassignment, error) {
	if err := c.checkActive(); err != nil {
		return nil, err
	}
	im := c.log.Image()
	if parts == nil {
		parts = everyPartition(im)
	}
	var out []PartitionReassignment
	for _, ref := range parts {
		t, err := im.TopicByID(ref.Topic)
		if err != nil {
			continue
		}
		p, err := im.Partition(ref.Topic, ref.Index)
		if err != nil || !p.Reassigning() {
			continue
		}
		out = append(out, PartitionReassignment{Topic: t.Name, Index: ref.Index, Partition: p})
	}
	return out, nil
}
