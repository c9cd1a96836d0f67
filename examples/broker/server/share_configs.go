package server

// Group configs (KIP-848 and KIP-932's dynamic group configs, the GROUP
// config resource, type 32): the share-group settings a group may
// override, set by IncrementalAlterConfigs (or AlterConfigs) and read
// back by DescribeConfigs. franz-go's share tests set
// share.auto.offset.reset to earliest this way before their consumers
// join, and shorten share.record.lock.duration.ms.
//
// Kafka keeps them in the metadata log (ConfigRecord of a GROUP
// resource), so that every broker sees them; here each broker keeps the
// ones it was sent, in memory: with one broker that is the same, in a
// cluster a partition's leader sees only the settings it was itself sent.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
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

// groupConfigs are the groups' own configs.
type groupConfigs struct {
	mu sync.Mutex // guards the following
	m  map[string]map[string]string
}

func newGroupConfigs() groupConfigs { return groupConfigs{m: make(map[string]map[string]string)} }

// get returns group's value of name, its own or the default.
func (g *groupConfigs) get(group, name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.m[group][name]; ok {
		return v
	}
	return shareGroupDefaults[name]
}

// lockDuration is group's share.record.lock.duration.ms.
func (g *groupConfigs) lockDuration(group string) time.Duration {
	ms, _ := strconv.Atoi(g.get(group, cfgShareLockDuration)) // checked when set
	return time.Duration(ms) * time.Millisecond
}

// alter applies a resource's changes, all or none. SET and DELETE are
// served; these configs are no lists, so APPEND and SUBTRACT are
// INVALID_CONFIG, as Kafka answers them.
func (g *groupConfigs) alter(rr configResource, incremental bool) error {
	for _, c := range rr.changes {
		switch {
		case c.Op == metadata.ConfigDelete:
			if _, ok := shareGroupDefaults[c.Name]; !ok {
				return checkGroupConfig(c.Name, "")
			}
		case c.Op != metadata.ConfigSet:
			return fmt.Errorf("%w: Can't APPEND or SUBTRACT to key %s because its type is not LIST.", kerr.InvalidConfig, c.Name)
		default:
			if err := checkGroupConfig(c.Name, *c.Value); err != nil {
				return err
			}
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	own := g.m[rr.name]
	if own == nil || !incremental { // AlterConfigs replaces the whole set
		own = make(map[string]string)
	}
	for _, c := range rr.changes {
		if c.Op == metadata.ConfigDelete {
			delete(own, c.Name)
		} else {
			own[c.Name] = *c.Value
		}
	}
	g.m[rr.name] = own
	return nil
}

// describe adds group's configs to sr: its own (GROUP_CONFIG) and the
// defaults (DEFAULT_CONFIG).
func (g *groupConfigs) describe(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) {
	g.mu.Lock()
	own := maps.Clone(g.m[rr.ResourceName])
	g.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(shareGroupDefaults)) {
		if v, ok := own[name]; ok {
			addConfig(rr, sr, storage.ConfigValue{Name: name, Value: v}, false, false, kmsg.ConfigSourceGroupConfig)
		} else {
			addConfig(rr, sr, storage.ConfigValue{Name: name, Value: shareGroupDefaults[name]}, false, true, kmsg.ConfigSourceDefaultConfig)
		}
	}
}
