package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// TopicConfigs is a topic's own configs, set by AlterConfigs or
// IncrementalAlterConfigs: they replace the ones it had, whole (the
// controller computed them from those), and the configs it lacks take the
// brokers' defaults. An entry whose topic is gone when it is applied is
// skipped, alike on every broker.
type TopicConfigs struct {
	Topic   TopicID           `json:"topic"`
	Configs map[string]string `json:"configs,omitempty"`
}

// ConfigOp is an IncrementalAlterConfigs operation, with Kafka's values.
type ConfigOp int8

const (
	// ConfigSet sets a config to a value.
	ConfigSet ConfigOp = 0
	// ConfigDelete removes the topic's own value: the default applies.
	ConfigDelete ConfigOp = 1
	// ConfigAppend adds values to a list config.
	ConfigAppend ConfigOp = 2
	// ConfigSubtract removes values from a list config.
	ConfigSubtract ConfigOp = 3
)

// String returns the operation's name, as Kafka's AlterConfigOp.OpType
// names it.
func (op ConfigOp) String() string {
	switch op {
	case ConfigSet:
		return "SET"
	case ConfigDelete:
		return "DELETE"
	case ConfigAppend:
		return "APPEND"
	case ConfigSubtract:
		return "SUBTRACT"
	}
	return fmt.Sprintf("ConfigOp(%d)", int8(op))
}

// ConfigChange is one operation of an IncrementalAlterConfigs resource.
type ConfigChange struct {
	Name  string
	Op    ConfigOp
	Value *string // nil for DELETE
}

// listConfigs are the configs of Kafka's LIST type, each with the
// default a list operation starts from when a resource has none of its
// own: a topic's cleanup.policy, and its broker-level default,
// log.cleanup.policy (the broker has no flag of it: Kafka's default); a
// topic's throttled-replica lists (KIP-73), empty by default.
var listConfigs = map[string]string{"cleanup.policy": "delete", "log.cleanup.policy": "delete",
	"leader.replication.throttled.replicas": "", "follower.replication.throttled.replicas": ""}

// IncrementalConfigs returns current, a topic's own configs, after changes,
// in order (KIP-339): SET sets a value, DELETE removes one. APPEND and
// SUBTRACT apply to list configs only (listConfigs): APPEND adds the
// comma-separated items the list lacks, SUBTRACT removes those it has,
// from the topic's own list or the default; on another config they fail
// with ErrInvalidConfig and Kafka's message ("Can't APPEND to key
// retention.ms because its type is not LIST."), as Kafka's controller
// answers for a config that is not a list.
// A SET without a value and an unknown operation fail with
// ErrInvalidConfig too (the server refuses both before, as Kafka's
// brokers do). current is not written. O(len(current) + len(changes)).
func IncrementalConfigs(current map[string]string, changes []ConfigChange) (map[string]string, error) {
	next := maps.Clone(current)
	if next == nil {
		next = make(map[string]string)
	}
	for _, c := range changes {
		switch c.Op {
		case ConfigSet:
			if c.Value == nil {
				return nil, fmt.Errorf("%w: a null value for %s", ErrInvalidConfig, c.Name)
			}
			next[c.Name] = *c.Value
		case ConfigDelete:
			delete(next, c.Name)
		case ConfigAppend, ConfigSubtract:
			def, ok := listConfigs[c.Name]
			if !ok {
				return nil, kafkaErrorf(ErrInvalidConfig, "Can't %s to key %s because its type is not LIST.", c.Op, c.Name)
			}
			if c.Value == nil {
				return nil, fmt.Errorf("%w: a null value for %s", ErrInvalidConfig, c.Name)
			}
			list, own := next[c.Name]
			if !own {
				list = def
			}
			next[c.Name] = listOp(list, *c.Value, c.Op == ConfigAppend)
		default:
			return nil, fmt.Errorf("%w: %v is not an operation of Kafka's", ErrInvalidConfig, c.Op)
		}
	}
	return next, nil
}

// SetTopicConfigs returns the record that makes configs topic name's own
// configs, in place of those it has (nil: none). When the topic may then
// be led uncleanly (UncleanElection, with uncleanDefault the cluster's
// default: unclean.leader.election.enable turned on), the same record
// elects a leader for each of its offline partitions as ElectUnclean
// does, as Kafka's controller acts on that config at once: a live
// replica of the ISR if one is left, else any live replica, alone in the
// ISR. A partition with no live replica stays offline, and the configs
// are set all the same. It fails with ErrUnknownTopic. The caller
// validates the values. O(partitions of the topic).
func SetTopicConfigs(im *Image, name string, configs map[string]string, uncleanDefault bool) (Record, error) {
	t, err := im.Topic(name)
	if err != nil {
		return Record{}, err
	}
	rec := Record{TopicConfigs: []TopicConfigs{{Topic: t.ID, Configs: maps.Clone(configs)}}}
	after := &Topic{Name: t.Name, ID: t.ID, Configs: configs}
	if !UncleanElection(after, uncleanDefault) {
		return rec, nil
	}
	var offline []PartitionRef
	for i, p := range t.Partitions {
		if p.Offline() {
			offline = append(offline, PartitionRef{Topic: t.ID, Index: int32(i)})
		}
	}
	elected, _ := Elect(im, ElectUnclean, offline) // those without a live replica are left out
	rec.Partitions = elected.Partitions
	return rec, nil
}

// setTopicConfigs applies tc to im, a clone being built by Apply, copying
// the topic first unless copied says it was already.
func (im *Image) setTopicConfigs(tc TopicConfigs, copied map[TopicID]bool) {
	t, ok := im.topics[tc.Topic]
	if !ok {
		return
	}
	if !copied[tc.Topic] {
		t = t.clone()
		im.topics[tc.Topic] = t
		copied[tc.Topic] = true
	}
	t.Configs = maps.Clone(tc.Configs)
}

// listOp returns list, comma-separated, with the items of values added
// (those it lacks, at its end) or removed.
func listOp(list, values string, add bool) string {
	items := splitList(list)
	for _, v := range splitList(values) {
		i := slices.Index(items, v)
		switch {
		case add && i < 0:
			items = append(items, v)
		case !add && i >= 0:
			items = slices.Delete(items, i, i+1)
		}
	}
	return strings.Join(items, ",")
}

// splitList returns the items of a comma-separated list, trimmed, the
// empty ones left out.
func splitList(list string) []string {
	var items []string
	for _, item := range strings.Split(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
