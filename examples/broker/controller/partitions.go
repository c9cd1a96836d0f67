package controller

import (
	"context"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// PartitionsSpec is one topic of a CreatePartitions request.
type PartitionsSpec struct {
	Topic string
	Count int32 // the topic's new total
	// Assignment gives the new partitions' replicas, in order; nil places
	// them as metadata.AddPartitions does (it must be that placement).
	Assignment [][]int32
}

// CreatePartitions grows the topics of specs (Kafka's CreatePartitions)
// in one record: each spec's new partitions are placed by
// metadata.AddPartitions and then checked by check, if not nil, with the
// topic as the image has it (the storage's bounds: check sees the specs
// that passed so far in order, and may count them). A spec that fails
// either is left out with its error; the others are committed together,
// or, with validateOnly, only checked. It returns each spec's error (nil:
// added, or would be) and the decision's: ErrNotController, ErrClosed,
// the log's, which leave every topic as it was. A topic named twice is
// the caller's to refuse: the second entry would fail here, decided
// against the count before the first.
func (c *Controller) CreatePartitions(ctx context.Context, specs []PartitionsSpec, validateOnly bool,
	check func(t *metadata.Topic, count int32) error) ([]error, error) {
	results := make([]error, len(specs))
	err := c.decideEach(ctx, validateOnly, func(im *metadata.Image) metadata.Record {
		var rec metadata.Record
		for i, spec := range specs {
			np, err := metadata.AddPartitions(im, c.brokers, spec.Topic, spec.Count, spec.Assignment)
			if err == nil && check != nil {
				t, _ := im.Topic(spec.Topic) // AddPartitions found it
				err = check(t, spec.Count)
			}
			if results[i] = err; err == nil {
				rec.AddPartitions = append(rec.AddPartitions, np)
			}
		}
		return rec
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// decideEach is decide for a request whose items each pass or fail on
// their own: f returns the record of those that passed (each item's
// error is f's to keep), committed unless validateOnly, which only
// checks. The error is the decision's.
func (c *Controller) decideEach(ctx context.Context, validateOnly bool, f func(im *metadata.Image) metadata.Record) error {
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		rec := f(im)
		if validateOnly {
			return metadata.Record{}, nil
		}
		return rec, nil
	})
	return err
}
