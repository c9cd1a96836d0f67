package server

// Group configs (KIP-848 and KIP-932's dynamic group configs, the GROUP
// config resource, type 32): the share-group settings a group may
// override, set by IncrementalAlterConfigs (or AlterConfigs) and read
// back by DescribeConfigs. franz-go's share tests set
// share.auto.offset.reset to earliest this way before their consumers
// join, and shorten share.record.lock.duration.ms. The group's
// share.session.timeout.ms and share.heartbeat.interval.ms apply from
// its members' next heartbeat (sharegroup.Config.Timeouts), its lock
// duration from the next acquisition. A group without its own value has
// the broker's group.share.* config (config.go), which DescribeConfigs
// shows as the default.
//
// As Kafka keeps them, they are in the metadata log (a GROUP resource's
// metadata.ResourceConfigs), decided by the active controller, which
// checks them (checkGroupConfigs, Kafka's GroupConfig.validate): every
// broker reads them from its image, so the leader of the partitions a
// share group reads sees the group's settings wherever they were sent,
// as soon as it has applied the record.

import (
	"errors"
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

// The share-group configs served (Kafka's GroupConfig, share.*).
const (
	cfgShareAutoOffsetReset   = "share.auto.offset.reset"       // latest or earliest
	cfgShareLockDuration      = "share.record.lock.duration.ms" // group.share.record.lock.duration.ms by default
	cfgShareSessionTimeout    = "share.session.timeout.ms"      // group.share.session.timeout.ms by default
	cfgShareHeartbeatInterval = "share.heartbeat.interval.ms"   // group.share.heartbeat.interval.ms by default
	cfgShareIsolationLevel    = "share.isolation.level"         // read_uncommitted or read_committed (share_isolation.go)
)

// shareGroupConfigs lists the group configs served, sorted.
var shareGroupConfigs = []string{cfgShareAutoOffsetReset, cfgShareHeartbeatInterval, cfgShareIsolationLevel,
	cfgShareLockDuration, cfgShareSessionTimeout}

// groupConfigDefault is the value of name for a group that sets none:
// Kafka's for share.auto.offset.reset and share.isolation.level, the
// broker's group.share.* for the others ("" for a name not served).
func (s *Server) groupConfigDefault(name string) string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	switch name {
	case cfgShareAutoOffsetReset:
		return "latest"
	case cfgShareIsolationLevel:
		return "read_uncommitted"
	case cfgShareLockDuration:
		return ms(s.cfg.GroupShareRecordLockDuration)
	case cfgShareSessionTimeout:
		return ms(s.cfg.GroupShareSessionTimeout)
	case cfgShareHeartbeatInterval:
		return ms(s.cfg.GroupShareHeartbeatInterval)
	}
	return ""
}

// checkGroupConfigs checks a group's configs, as a whole, for the
// controller, as Kafka's GroupConfig.validate does (INVALID_CONFIG): a
// name served, share.auto.offset.reset latest or earliest (by_duration
// is not served), share.isolation.level read_uncommitted or
// read_committed, and each duration within the broker's
// group.share.min/max.* for it, 15 s to 60 s for the lock duration, 45 s
// to 60 s for the session timeout and 5 s to 15 s for the heartbeat
// interval by default; the session timeout, the group's or the broker's,
// longer than the heartbeat interval, the group's or the broker's.
func (s *Server) checkGroupConfigs(configs map[string]string) error {
	invalid := func(name, why string) error {
		return fmt.Errorf("%w: %s=%q %s", kerr.InvalidConfig, name, configs[name], why)
	}
	millis := func(name string, lo, hi time.Duration) error {
		ms, err := strconv.ParseInt(configs[name], 10, 32)
		if err != nil || ms < lo.Milliseconds() || ms > hi.Milliseconds() {
			return invalid(name, fmt.Sprintf("is not in [%d, %d]", lo.Milliseconds(), hi.Milliseconds()))
		}
		return nil
	}
	c := &s.cfg
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		var err error
		switch v := configs[name]; name {
		case cfgShareAutoOffsetReset:
			if v != "latest" && v != "earliest" {
				err = invalid(name, "is not latest or earliest")
			}
		case cfgShareIsolationLevel:
			if v != "read_uncommitted" && v != "read_committed" {
				err = invalid(name, "is not read_uncommitted or read_committed")
			}
		case cfgShareLockDuration:
			err = millis(name, c.GroupShareMinRecordLockDuration, c.GroupShareMaxRecordLockDuration)
		case cfgShareSessionTimeout:
			err = millis(name, c.GroupShareMinSessionTimeout, c.GroupShareMaxSessionTimeout)
		case cfgShareHeartbeatInterval:
			err = millis(name, c.GroupShareMinHeartbeatInterval, c.GroupShareMaxHeartbeatInterval)
		default:
			err = fmt.Errorf("%w: %s is not a group config this broker serves", kerr.InvalidConfig, name)
		}
		if err != nil {
			return err
		}
	}
	session := groupMillisOf(configs, cfgShareSessionTimeout, c.GroupShareSessionTimeout)
	if interval := groupMillisOf(configs, cfgShareHeartbeatInterval, c.GroupShareHeartbeatInterval); session <= interval {
		return fmt.Errorf("%w: %s (%v) must be greater than %s (%v)", kerr.InvalidConfig,
			cfgShareSessionTimeout, session, cfgShareHeartbeatInterval, interval)
	}
	return nil
}

// validateShareGroups reports the first group.share.* broker config out
// of Kafka's ranges (GroupCoordinatorConfig's and ShareGroupConfig's
// checks): each default within its bounds, the heartbeat interval below
// the session timeout, a lock duration's bounds around its default of
// 30 s, 2 to 10 deliveries, 100 to 10000 records in flight, 1 to 1000
// members.
func (c *Config) validateShareGroups() error {
	within := func(name string, d, lo, hi time.Duration) error {
		if d < lo || d > hi {
			return fmt.Errorf("%s: %v, must be within its min and max (%v, %v)", name, d, lo, hi)
		}
		return nil
	}
	switch {
	case c.GroupShareMinSessionTimeout < time.Millisecond || c.GroupShareMinHeartbeatInterval < time.Millisecond:
		return errors.New("group.share.min.session.timeout.ms and group.share.min.heartbeat.interval.ms must be at least 1")
	case c.GroupShareMinRecordLockDuration < time.Second || c.GroupShareMinRecordLockDuration > 30*time.Second:
		return fmt.Errorf("group.share.min.record.lock.duration.ms: %v, must be from 1000 to 30000", c.GroupShareMinRecordLockDuration)
	case c.GroupShareMaxRecordLockDuration < 30*time.Second || c.GroupShareMaxRecordLockDuration > time.Hour:
		return fmt.Errorf("group.share.max.record.lock.duration.ms: %v, must be from 30000 to 3600000", c.GroupShareMaxRecordLockDuration)
	case c.GroupShareDeliveryCountLimit < 2 || c.GroupShareDeliveryCountLimit > 10:
		return fmt.Errorf("group.share.delivery.count.limit: %d, must be from 2 to 10", c.GroupShareDeliveryCountLimit)
	case c.GroupSharePartitionMaxRecordLocks < 100 || c.GroupSharePartitionMaxRecordLocks > 10000:
		return fmt.Errorf("group.share.partition.max.record.locks: %d, must be from 100 to 10000", c.GroupSharePartitionMaxRecordLocks)
	case c.GroupShareMaxSize < 1 || c.GroupShareMaxSize > 1000:
		return fmt.Errorf("group.share.max.size: %d, must be from 1 to 1000", c.GroupShareMaxSize)
	}
	if err := within("group.share.session.timeout.ms", c.GroupShareSessionTimeout,
		c.GroupShareMinSessionTimeout, c.GroupShareMaxSessionTimeout); err != nil {
		return err
	}
	if err := within("group.share.heartbeat.interval.ms", c.GroupShareHeartbeatInterval,
		c.GroupShareMinHeartbeatInterval, c.GroupShareMaxHeartbeatInterval); err != nil {
		return err
	}
	if err := within("group.share.record.lock.duration.ms", c.GroupShareRecordLockDuration,
		c.GroupShareMinRecordLockDuration, c.GroupShareMaxRecordLockDuration); err != nil {
		return err
	}
	if c.GroupShareHeartbeatInterval >= c.GroupShareSessionTimeout {
		return fmt.Errorf("group.share.heartbeat.interval.ms: %v, must be below group.share.session.timeout.ms (%v)",
			c.GroupShareHeartbeatInterval, c.GroupShareSessionTimeout)
	}
	return nil
}

// groupMillisOf reads the duration configs holds for name, checked when
// set, or def without one.
func groupMillisOf(configs map[string]string, name string, def time.Duration) time.Duration {
	v, ok := configs[name]
	if !ok {
		return def
	}
	ms, _ := strconv.ParseInt(v, 10, 32)
	return time.Duration(ms) * time.Millisecond
}

// groupConfig returns group's value of name, its own or the default, as
// this broker's image holds it. O(1), without a lock.
func (s *Server) groupConfig(group, name string) string {
	if v, ok := s.image().Configs(groupConfigResource(group))[name]; ok {
		return v
	}
	return s.groupConfigDefault(name)
}

// groupConfigResource names group's configs in the metadata log.
func groupConfigResource(group string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.ConfigResourceGroup, Name: group}
}

// lockDuration is group's share.record.lock.duration.ms.
func (s *Server) lockDuration(group string) time.Duration {
	return groupMillisOf(s.image().Configs(groupConfigResource(group)), cfgShareLockDuration, s.cfg.GroupShareRecordLockDuration)
}

// shareTimeouts returns group's own share.session.timeout.ms and
// share.heartbeat.interval.ms, each zero where it has none: the share
// coordinator's Config.Timeouts.
func (s *Server) shareTimeouts(group string) (session, interval time.Duration) {
	own := s.image().Configs(groupConfigResource(group))
	return groupMillisOf(own, cfgShareSessionTimeout, 0), groupMillisOf(own, cfgShareHeartbeatInterval, 0)
}

// describeGroupConfigs adds group's configs to sr: its own (GROUP_CONFIG)
// and the defaults (DEFAULT_CONFIG), the broker's group.share.* values
// for those it has.
func (s *Server) describeGroupConfigs(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) {
	own := s.image().Configs(groupConfigResource(rr.ResourceName))
	for _, name := range shareGroupConfigs {
		if v, ok := own[name]; ok {
			addConfig(rr, sr, storage.ConfigValue{Name: name, Value: v}, false, false, kmsg.ConfigSourceGroupConfig)
		} else {
			addConfig(rr, sr, storage.ConfigValue{Name: name, Value: s.groupConfigDefault(name)}, false, true, kmsg.ConfigSourceDefaultConfig)
		}
	}
}
