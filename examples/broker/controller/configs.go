package controller

import (
	"context"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// ConfigsSpec is one topic of an AlterConfigs or IncrementalAlterConfigs
// request.
type ConfigsSpec struct {
	Topic string
	// Configs, for AlterConfigs, are the topic's new own configs,
	// replacing all of them (nil: none left).
	Configs map[string]string
	// Changes, for IncrementalAlterConfigs (Incremental set), change
	// the topic's own configs one by one (metadata.IncrementalConfigs).
	Changes     []metadata.ConfigChange
	Incremental bool
}

// AlterTopicConfigs sets the own configs of the topics of specs (Kafka's
// AlterConfigs and IncrementalAlterConfigs) in one record: each spec's
// new configs are computed against the topic's current ones, checked by
// check, if not nil (the values: the storage's TopicConfig.With), then
// the topic's existence is, as Kafka's controller checks a config before
// its resource, and metadata.SetTopicConfigs decides (a topic whose
// unclean.leader.election.enable turns on has its offline partitions
// elected in the same record). A spec that fails is left out with its
// error; the others are committed together, or, with validateOnly, only
// checked. It returns each spec's error (nil: set, or would be) and the
// decision's: ErrNotController, ErrClosed, the log's, which leave every
// topic as it was. A topic named twice is the caller's to refuse: both
// entries would be decided against the configs before either.
func (c *Controller) AlterTopicConfigs(ctx context.Context, specs []ConfigsSpec, validateOnly bool,
	check func(topic string, configs map[string]string) error) ([]error, error) {
	results := make([]error, len(specs))
	err := c.decideEach(ctx, validateOnly, func(im *metadata.Image) metadata.Record {
		var rec metadata.Record
		for i, spec := range specs {
			next, err := c.topicConfigs(im, spec, check)
			var one metadata.Record
			if err == nil {
				one, err = metadata.SetTopicConfigs(im, spec.Topic, next, c.cfg.unclean)
			}
			if results[i] = err; err == nil {
				rec.TopicConfigs = append(rec.TopicConfigs, one.TopicConfigs...)
				rec.Partitions = append(rec.Partitions, one.Partitions...)
			}
		}
		return rec
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// topicConfigs returns the own configs spec gives its topic, checked by
// check: an unknown topic has none yet, so that its values are checked
// before its existence.
func (c *Controller) topicConfigs(im *metadata.Image, spec ConfigsSpec, check func(string, map[string]string) error) (map[string]string, error) {
	next := spec.Configs
	if spec.Incremental {
		var current map[string]string
		if t, err := im.Topic(spec.Topic); err == nil {
			current = t.Configs
		}
		var err error
		if next, err = metadata.IncrementalConfigs(current, spec.Changes); err != nil {
			return nil, err
		}
	}
	if check != nil {
		if err := check(spec.Topic, next); err != nil {
			return nil, err
		}
	}
	return next, nil
}
