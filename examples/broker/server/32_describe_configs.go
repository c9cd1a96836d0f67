package server

// DescribeConfigs: v0-v4.
//
// A topic resource (type 2) lists the topic configs this broker enforces
// (max.message.bytes, min.insync.replicas, retention.bytes, retention.ms,
// unclean.leader.election.enable, those of compaction and segments, and
// the replication throttles' leader.replication.throttled.replicas and
// follower.replication.throttled.replicas, "" unless set)
// with their values as the storage applies them now (AlterConfigs and
// IncrementalAlterConfigs change them live); each is DYNAMIC_TOPIC_CONFIG
// when the topic has it of its own (set at creation or by those APIs, as
// the metadata log holds it, even at the default's value); otherwise the
// source of its broker-level default (broker_configs.go):
// DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG when set
// dynamically, DEFAULT_CONFIG for the static setting (v1+; v0's
// is_default says whether it is DEFAULT_CONFIG). A broker alone's log.dirs
// catalog keeps values, not which were set: after its restart, a topic's
// own config equal to the broker's default shows as DEFAULT_CONFIG. An
// unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
//
// A broker resource (type 4) named by this broker's id lists its
// settings under their Kafka names, and the dynamic configs it has no
// flag of (the topic configs' log.* defaults, and
// leader.replication.throttled.rate and follower.replication.throttled.rate,
// Long.MAX_VALUE by default), each from the source that gave its value: DYNAMIC_BROKER_CONFIG
// (its own), DYNAMIC_DEFAULT_BROKER_CONFIG (the cluster's), else
// STATIC_BROKER_CONFIG (a flag), or DEFAULT_CONFIG (Kafka's default, for
// a dynamic config without a flag); read-only unless dynamic here. The
// resource named "" (the cluster-wide default) lists the dynamic defaults
// set, as Kafka lists them. Another broker's id is INVALID_REQUEST, as
// Kafka answers a broker resource sent to the wrong broker.
//
// With include_synonyms (v1+), a topic's config and a broker's list every
// level that has a value, the one that won first: the topic's own, this
// broker's dynamic value, the cluster's dynamic default, the static
// setting or Kafka's default, each under its own name (retention.ms,
// then log.retention.ms), as Kafka's DescribeConfigs does.
//
// A group resource (type 32) lists the share-group configs, the group's
// own (in the metadata log) as GROUP_CONFIG and the others as
// DEFAULT_CONFIG (share_configs.go). configuration_keys, when given,
// narrows the list. Other resource types are INVALID_REQUEST.
//
// In a cluster, topic, broker and group configs are in the metadata log,
// so every broker answers from its image (package replica applies the
// topics').
//
// Authorization (authz.go): DESCRIBE_CONFIGS on the topic, or on the
// cluster for a broker; else TOPIC_AUTHORIZATION_FAILED or
// CLUSTER_AUTHORIZATION_FAILED for the resource, as Kafka answers.
//
// Not implemented: documentation, and sensitive configs' masking.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DescribeConfigs, 0, 4, (*Server).handleDescribeConfigs) }

func (s *Server) handleDescribeConfigs(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	c := s.access(r)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if code := c.TopicCode(opDescribeConfigs, rr.ResourceName); code != 0 {
				sr.ErrorCode = code
				break
			}
			err = s.describeTopicConfigs(rr, &sr, req.IncludeSynonyms)
		case kmsg.ConfigResourceTypeBroker:
			if code := c.ClusterCode(opDescribeConfigs); code != 0 {
				sr.ErrorCode = code
				break
			}
			err = s.describeBrokerConfigs(rr, &sr, req.IncludeSynonyms)
		case kmsg.ConfigResourceTypeGroupConfig:
			if !c.Allows(opDescribeConfigs, groupResource, rr.ResourceName) {
				sr.ErrorCode = kerr.GroupAuthorizationFailed.Code
				break
			}
			s.describeGroupConfigs(rr, &sr) // share_configs.go
		default:
			err = fmt.Errorf("%w: resource type %d", errInvalidRequest, rr.ResourceType)
		}
		if err != nil {
			sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
			sr.Configs = nil
		}
		resp.Resources = append(resp.Resources, sr)
	}
	r.Respond(resp)
}

// describeTopicConfigs adds topic rr's configs to sr, each with the
// source that gave its value: the topic's own (DYNAMIC_TOPIC_CONFIG), its
// broker-level default's dynamic value on this broker
// (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG), or the
// broker's static default (DEFAULT_CONFIG: a flag given cannot be told
// from its default); with synonyms, the levels under it.
func (s *Server) describeTopicConfigs(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource, synonyms bool) error {
	t, err := s.data.store.Topic(rr.ResourceName)
	if err != nil {
		return err
	}
	im := s.image()
	var own map[string]string // the topic's own configs, by the image
	if mt, err := im.Topic(rr.ResourceName); err == nil && storage.TopicID(mt.ID) == t.ID {
		own = mt.Configs
	}
	levels := s.newConfigLevels(im)
	for _, v := range t.Config().Values() {
		var syn []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
		if _, ok := own[v.Name]; ok {
			syn = append(syn, synonym(v.Name, own[v.Name], kmsg.ConfigSourceDynamicTopicConfig))
		}
		if b, ok := brokerSynonyms[v.Name]; ok {
			syn = append(syn, levels.of(b)...)
		}
		source := kmsg.ConfigSourceDefaultConfig
		if len(syn) > 0 && syn[0].Source != kmsg.ConfigSourceStaticBrokerConfig {
			source = syn[0].Source
		}
		c := configEntry(v, false, source)
		if synonyms {
			c.ConfigSynonyms = syn
		}
		addEntry(rr, sr, c)
	}
	return nil
}

// describeBrokerConfigs adds broker rr's configs to sr: this broker's
// (its id), each with the source that gave its value
// (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
// STATIC_BROKER_CONFIG, DEFAULT_CONFIG for a dynamic config without a
// flag), read-only unless dynamic here (broker_configs.go); or, for the
// cluster default (""), the dynamic defaults set, as Kafka lists them.
// With synonyms, each lists its levels, the winner first.
func (s *Server) describeBrokerConfigs(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource, synonyms bool) error {
	im := s.image()
	if rr.ResourceName == "" {
		defaults := im.Configs(metadata.ClusterDefault)
		for _, name := range slices.Sorted(maps.Keys(defaults)) {
			v := storage.ConfigValue{Name: name, Value: defaults[name]}
			c := configEntry(v, false, kmsg.ConfigSourceDynamicDefaultBrokerConfig)
			if synonyms {
				c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(name, v.Value, c.Source))
			}
			addEntry(rr, sr, c)
		}
		return nil
	}
	if rr.ResourceName != strconv.Itoa(int(s.cfg.NodeID)) {
		return fmt.Errorf("%w: broker %s is not this broker (%d)", errInvalidRequest, rr.ResourceName, s.cfg.NodeID)
	}
	levels := s.newConfigLevels(im)
	names := slices.Collect(maps.Keys(levels.static))
	for _, dynamic := range []map[string]string{topicSynonyms, {leaderThrottleRate: "", followerThrottleRate: ""}} {
		for name := range dynamic {
			if _, ok := levels.static[name]; !ok {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	for _, name := range names {
		syn := levels.of(name)
		_, dynamic := topicSynonyms[name]
		dynamic = dynamic || throttleRates[name]
		c := configEntry(storage.ConfigValue{Name: name, Value: *syn[0].Value}, !dynamic, syn[0].Source)
		if synonyms {
			c.ConfigSynonyms = syn
		}
		addEntry(rr, sr, c)
	}
	return nil
}

// addConfig adds v to sr if the request asks for it (every config when it
// names none).
func addConfig(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource, v storage.ConfigValue,
	readOnly, isDefault bool, source kmsg.ConfigSource) {
	c := configEntry(v, readOnly, source)
	c.IsDefault = isDefault
	addEntry(rr, sr, c)
}

// configEntry returns v's entry from source, the default (v0's
// is_default) when source is DEFAULT_CONFIG.
func configEntry(v storage.ConfigValue, readOnly bool, source kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value = v.Name, kmsg.StringPtr(v.Value)
	c.ReadOnly, c.IsDefault, c.Source = readOnly, source == kmsg.ConfigSourceDefaultConfig, source
	return c
}

// addEntry adds c to sr if the request asks for it (every config when it
// names none).
func addEntry(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource, c kmsg.DescribeConfigsResponseResourceConfig) {
	if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, c.Name) {
		return
	}
	sr.Configs = append(sr.Configs, c)
}
