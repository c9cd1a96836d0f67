package server

// Group configs (KIP-848 and KIP-932's dynamic group configs, the GROUP
// config resource, type 32): the share-group settings a group may
// override, set by IncrementalAlterConfigs (or AlterConfigs) and read
// back by DescribeConfigs. franz-go's share tests set
// share.auto.offset.reset to earliest this way before their consumers
// join, and shorten share.record.lock.duration.ms.
//
// As Kafka keeps them, they are in the metadata log (a GROUP resource's
// metadata.ResourceConfigs), decided by the active controller, which
// checks them (checkGroupConfigs, Kafka's GroupConfig.validate): every
// broker reads them from its image, so the leader of the partitions a
// share group reads sees the group's settings wherever they were sent,
// as soon as it has applied the record.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// The share-group configs served, with Kafka's defaults.
const (
	cfgShareAutoOffsetReset = "share.auto.offset.reset"       // latest or earliest
	cfgShareLockDuration    = "share.record.lock.duration.ms" // group.share.record.lock.duration.ms
)

// shareGroupDefaults are the broker's values of the group configs.
var shareGroupDefaults = map[string]string{
	cfgShareAutoOffsetReset: "latest",
	cfgShareLockDuration:    "30000",
}

// checkGroupConfig refuses a value Kafka would refuse (INVALID_CONFIG):
// share.auto.offset.reset is latest or earliest (by_duration is not
// served), and a lock duration lies within Kafka's
// group.share.min/max.record.lock.duration.ms, 15 s to 60 s.
func checkGroupConfig(name, value string) error {
	switch name {
	case cfgShareAutoOffsetReset:
		if value != "latest" && value != "earliest" {
			return fmt.Errorf("%w: %s=%q is not latest or earliest", kerr.InvalidConfig, name, value)
		}
	case cfgShareLockDuration:
		ms, err := strconv.ParseInt(value, 10, 32)
		if err != nil || ms < 15000 || ms > 60000 {
			return fmt.Errorf("%w: %s=%q is not in [15000, 60000]", kerr.InvalidConfig, name, value)
		}
	default:
		return fmt.Errorf("%w: %s is not a group config this broker serves", kerr.InvalidConfig, name)
	}
	return nil
}

// checkGroupConfigs checks a group's configs, as a whole, for the
// controller (checkGroupConfig, in name order).
func checkGroupConfigs(configs map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		if err := checkGroupConfig(name, configs[name]); err != nil {
			return err
		}
	}
	return nil
}

// groupConfig returns group's value of name, its own or the default, as
// this broker's image holds it. O(1), without a lock.
func (s *Server) groupConfig(group, name string) string {
	if v, ok := s.image().Configs(groupConfigResource(group))[name]; ok {
		return v
	}
	return shareGroupDefaults[name]
}

// groupConfigResource names group's configs in the metadata log.
func groupConfigResource(group string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.ConfigResourceGroup, Name: group}
}

// lockDuration is group's share.record.lock.duration.ms.
func (s *Server) lockDuration(group string) time.Duration {
	ms, _ := strconv.Atoi(s.groupConfig(group, cfgShareLockDuration)) // checked when set
	return time.Duration(ms) * time.Millisecond
}

// describeGroupConfigs adds group's configs to sr: its own (GROUP_CONFIG)
// and the defaults (DEFAULT_CONFIG).
func (s *Server) describeGroupConfigs(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) {
	own := s.image().Configs(groupConfigResource(rr.ResourceName))
	for _, name := range slices.Sorted(maps.Keys(shareGroupDefaults)) {
		if v, ok := own[name]; ok {
			addConfig(rr, sr, storage.ConfigValue{Name: name, Value: v}, false, false, kmsg.ConfigSourceGroupConfig)
		} else {
			addConfig(rr, sr, storage.ConfigValue{Name: name, Value: shareGroupDefaults[name]}, false, true, kmsg.ConfigSourceDefaultConfig)
		}
	}
}
