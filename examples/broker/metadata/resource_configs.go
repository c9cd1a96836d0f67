package metadata

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Broker and group configs (Kafka's ConfigRecord of a BROKER or GROUP
// resource, and ConfigurationsImage): the configs AlterConfigs and
// IncrementalAlterConfigs set on a broker (by its id), on every broker
// (the cluster-wide default, the broker resource named ""), or on a group
// (KIP-848 and KIP-932's group configs). The log holds them so that every
// broker sees the same ones: a partition leader serving a share group
// reads the group's settings wherever they were sent, and a cluster
// default changed through one broker applies on all.
//
// As a topic's own configs (TopicConfigs), a resource's configs are
// replaced whole by each entry: the controller computed them from the
// ones it had. What a config means is the brokers' business (package
// server validates and applies them); the controller acts on one itself:
// the cluster default of unclean.leader.election.enable (UncleanDefault).

// ConfigResourceType is a config resource's type, with Kafka's values
// (kmsg.ConfigResourceType's).
type ConfigResourceType int8

const (
	// ConfigResourceTopic is a topic (its configs are the topic's own:
	// Topic.Configs, set by TopicConfigs).
	ConfigResourceTopic ConfigResourceType = 2
	// ConfigResourceBroker is a broker, by id, or the cluster-wide
	// default, named "".
	ConfigResourceBroker ConfigResourceType = 4
	// ConfigResourceGroup is a group, by id.
	ConfigResourceGroup ConfigResourceType = 32
)

// ConfigResource names a broker or group resource.
type ConfigResource struct {
	Type ConfigResourceType `json:"type"`
	Name string             `json:"name"`
}

// ClusterDefault is the broker resource of the cluster-wide default
// broker configs (Kafka's <default>).
var ClusterDefault = ConfigResource{Type: ConfigResourceBroker}

// BrokerResource returns broker id's own config resource.
func BrokerResource(id int32) ConfigResource {
	return ConfigResource{Type: ConfigResourceBroker, Name: strconv.Itoa(int(id))}
}

// ResourceConfigs sets a broker or group resource's configs, replacing
// all it had (none left: the resource is gone from the image).
type ResourceConfigs struct {
	Resource ConfigResource    `json:"resource"`
	Configs  map[string]string `json:"configs,omitempty"`
}

// Configs returns res's configs (a topic's own, for a topic), nil if it
// has none. The map must not be written.
func (im *Image) Configs(res ConfigResource) map[string]string {
	if res.Type == ConfigResourceTopic {
		if t, err := im.Topic(res.Name); err == nil {
			return t.Configs
		}
		return nil
	}
	return im.configs[res]
}

// BrokerConfig returns broker id's dynamic value of name: its own, else
// the cluster default's; perBroker says which. ok is false when neither
// has one: the broker's static setting applies. O(1).
func (im *Image) BrokerConfig(id int32, name string) (value string, perBroker, ok bool) {
	if v, ok := im.configs[BrokerResource(id)][name]; ok {
		return v, true, true
	}
	v, ok := im.configs[ClusterDefault][name]
	return v, false, ok
}

// ConfigEntries lists every broker and group resource's configs, by type
// and name: what a snapshot, or a broker alone's log dir, keeps.
func (im *Image) ConfigEntries() []ResourceConfigs {
	out := make([]ResourceConfigs, 0, len(im.configs))
	for res, configs := range im.configs {
		out = append(out, ResourceConfigs{Resource: res, Configs: configs})
	}
	slices.SortFunc(out, func(a, b ResourceConfigs) int {
		return cmp.Or(cmp.Compare(a.Resource.Type, b.Resource.Type), strings.Compare(a.Resource.Name, b.Resource.Name))
	})
	return out
}

// applyConfigs applies entries to im, a clone being built by Apply: the
// map is copied once, the configs of each entry are its own copy. An
// entry for a topic is skipped (TopicConfigs sets those).
func (im *Image) applyConfigs(entries []ResourceConfigs) {
	if len(entries) == 0 {
		return
	}
	im.configs = maps.Clone(im.configs)
	if im.configs == nil {
		im.configs = make(map[ConfigResource]map[string]string)
	}
	for _, e := range entries {
		switch {
		case e.Resource.Type == ConfigResourceTopic:
		case len(e.Configs) == 0:
			delete(im.configs, e.Resource)
		default:
			im.configs[e.Resource] = maps.Clone(e.Configs)
		}
	}
}

// UncleanDefault returns the cluster's unclean.leader.election.enable, for
// topics without their own: the cluster-wide default broker config if
// set, else static, the controller's setting, as Kafka's controller
// reads it (a broker's own value does not count: the controller decides
// for the cluster). A value that is no boolean (the brokers validate
// them) is false.
func UncleanDefault(im *Image, static bool) bool {
	v, ok := im.configs[ClusterDefault][ConfigUncleanLeaderElection]
	if !ok {
		return static
	}
	return strings.EqualFold(v, "true")
}

// SetConfigs returns the record that makes configs broker or group
// resource res's configs, in place of those it has (nil: none). When the
// cluster-wide default of unclean.leader.election.enable turns on (with
// static the controller's setting, as UncleanDefault reads it), the same
// record elects a leader for each offline partition of every topic that
// then allows it, as SetTopicConfigs does for one topic: Kafka's
// controller acts on that config at once. The caller validates the
// resource's name and the values. O(1), or O(partitions) when the
// unclean default turns on.
func SetConfigs(im *Image, res ConfigResource, configs map[string]string, static bool) Record {
	rec := Record{Configs: []ResourceConfigs{{Resource: res, Configs: maps.Clone(configs)}}}
	if res != ClusterDefault || UncleanDefault(im, static) {
		return rec
	}
	after := im.clone()
	after.applyConfigs(rec.Configs)
	if !UncleanDefault(after, static) {
		return rec
	}
	var offline []PartitionRef
	for _, t := range im.Topics() {
		if !UncleanElection(t, true) {
			continue // the topic's own false
		}
		for i, p := range t.Partitions {
			if p.Offline() {
				offline = append(offline, PartitionRef{Topic: t.ID, Index: int32(i)})
			}
		}
	}
	elected, _ := Elect(im, ElectUnclean, offline) // those without a live replica are left out
	rec.Partitions = elected.Partitions
	return rec
}

// CheckConfigResource refuses a resource name that cannot be one, with
// ErrInvalidRequest: a broker's must be its id or "", as Kafka's
// controller checks (ControllerConfigurationValidator, its message); a
// group's must not be empty (this broker's check: a group has an id); a
// type other than a topic, a broker or a group. A topic's is checked by
// its existence (ErrUnknownTopic).
func CheckConfigResource(res ConfigResource) error {
	switch res.Type {
	case ConfigResourceBroker:
		if res.Name == "" {
			return nil
		}
		if _, err := strconv.ParseInt(res.Name, 10, 32); err != nil {
			return kafkaErrorf(ErrInvalidRequest, "Node id must be an integer, but it is: %s", res.Name)
		}
	case ConfigResourceGroup:
		if res.Name == "" {
			return kafkaErrorf(ErrInvalidRequest, "Group name must not be empty")
		}
	case ConfigResourceTopic:
	default:
		return kafkaErrorf(ErrInvalidRequest, "Unknown resource type %d", res.Type)
	}
	return nil
}
