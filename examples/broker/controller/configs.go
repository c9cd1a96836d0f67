package controller

import (
	"context"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// ConfigsSpec is one resource of an AlterConfigs or
// IncrementalAlterConfigs request: a topic, a broker (by id, or "" for
// the cluster-wide default) or a group.
type ConfigsSpec struct {
	Resource metadata.ConfigResource
	// Configs, for AlterConfigs, are the resource's new own configs,
	// replacing all of them (nil: none left).
	Configs map[string]string
	// Changes, for IncrementalAlterConfigs (Incremental set), change
	// the resource's own configs one by one (metadata.IncrementalConfigs).
	Changes     []metadata.ConfigChange
	Incremental bool
}

// ConfigCheck checks the configs a resource would have (the values: the
// storage's TopicConfig.With for a topic, the broker's and the group
// coordinator's validators for the others), returning the error its
// resource is answered with.
type ConfigCheck func(res metadata.ConfigResource, configs map[string]string) error

// AlterConfigs sets the own configs of the resources of specs (Kafka's
// AlterConfigs and IncrementalAlterConfigs, ConfigurationControlManager)
// in one record: each spec's new configs are computed against the
// resource's current ones, the resource's name is checked
// (metadata.CheckConfigResource: a broker's is an id), then the values
// by check, if not nil, then a topic's existence, as Kafka's controller
// checks a config before its resource, and metadata.SetTopicConfigs or
// metadata.SetConfigs decides (a topic whose
// unclean.leader.election.enable turns on has its offline partitions
// elected in the same record; the cluster default's turned on, those of
// every topic without its own). A spec that fails is left out with its
// error; the others are committed together, or, with validateOnly, only
// checked. It returns each spec's error (nil: set, or would be) and the
// decision's: ErrNotController, ErrClosed, the log's, which leave every
// resource as it was. A resource named twice is the caller's to refuse:
// both entries would be decided against the configs before either.
func (c *Controller) AlterConfigs(ctx context.Context, specs []ConfigsSpec, validateOnly bool, check ConfigCheck) ([]error, error) {
	results := make([]error, len(specs))
	err := c.decideEach(ctx, validateOnly, func(im *metadata.Image) metadata.Record {
		var rec metadata.Record
		for i, spec := range specs {
			next, err := c.resourceConfigs(im, spec, check)
			var one metadata.Record
			if err == nil {
				one, err = c.setConfigs(im, spec.Resource, next)
			}
			if results[i] = err; err == nil {
				rec.TopicConfigs = append(rec.TopicConfigs, one.TopicConfigs...)
				rec.Configs = append(rec.Configs, one.Configs...)
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

// setConfigs returns the record that gives res the configs next. Two
// resources of one request that each elect a partition (a topic's
// unclean turned on, and the cluster default's) elect it twice, alike:
// the later change wins, with the same leader.
func (c *Controller) setConfigs(im *metadata.Image, res metadata.ConfigResource, next map[string]string) (metadata.Record, error) {
	if res.Type == metadata.ConfigResourceTopic {
		return metadata.SetTopicConfigs(im, res.Name, next, c.uncleanDefault(im))
	}
	return metadata.SetConfigs(im, res, next, c.cfg.unclean), nil
}

// resourceConfigs returns the own configs spec gives its resource,
// checked by check: an unknown topic has none yet, so that its values are
// checked before its existence.
func (c *Controller) resourceConfigs(im *metadata.Image, spec ConfigsSpec, check ConfigCheck) (map[string]string, error) {
	if err := metadata.CheckConfigResource(spec.Resource); err != nil {
		return nil, err
	}
	next := spec.Configs
	if spec.Incremental {
		var err error
		if next, err = metadata.IncrementalConfigs(im.Configs(spec.Resource), spec.Changes); err != nil {
			return nil, err
		}
	}
	if check != nil {
		if err := check(spec.Resource, next); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// uncleanDefault is the cluster's unclean.leader.election.enable for
// topics without their own: the cluster-wide dynamic default, else this
// controller's setting.
func (c *Controller) uncleanDefault(im *metadata.Image) bool {
	return metadata.UncleanDefault(im, c.cfg.unclean)
}
