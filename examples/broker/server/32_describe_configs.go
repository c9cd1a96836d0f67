package server

// DescribeConfigs: v0-v4.
//
// A topic resource (type 2) lists the topic configs this broker enforces
// (max.message.bytes, min.insync.replicas, retention.bytes, retention.ms,
// unclean.leader.election.enable)
// with their values as the storage applies them now (AlterConfigs and
// IncrementalAlterConfigs change them live); each is DYNAMIC_TOPIC_CONFIG
// when the topic has it of its own (set at creation or by those APIs, as
// the metadata log holds it, even at the default's value) and
// DEFAULT_CONFIG otherwise (v1+; v0's is_default says the same). A broker
// alone's log.dirs catalog keeps values, not which were set: after its
// restart, a topic's own config equal to the broker's default shows as
// DEFAULT_CONFIG. An unknown topic is UNKNOWN_TOPIC_OR_PARTITION. A broker
// resource (type 4) named by this broker's id lists its settings, under
// their Kafka names, as STATIC_BROKER_CONFIG, read-only; another broker's
// id is INVALID_REQUEST, as Kafka answers a broker resource sent to the
// wrong broker. A group resource (type 32) lists the share-group configs,
// the group's own as GROUP_CONFIG and the others as DEFAULT_CONFIG
// (share_configs.go). configuration_keys, when given, narrows the list.
// Other resource types are INVALID_REQUEST.
//
// In a cluster, a topic's own configs are in the metadata log, so every
// broker answers the same (package replica applies them).
//
// Authorization (authz.go): DESCRIBE_CONFIGS on the topic, or on the
// cluster for a broker; else TOPIC_AUTHORIZATION_FAILED or
// CLUSTER_AUTHORIZATION_FAILED for the resource, as Kafka answers.
//
// Not implemented: synonyms (include_synonyms is ignored) and
// documentation.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
			err = s.describeTopicConfigs(rr, &sr)
		case kmsg.ConfigResourceTypeBroker:
			if code := c.ClusterCode(opDescribeConfigs); code != 0 {
				sr.ErrorCode = code
				break
			}
			err = s.describeBrokerConfigs(rr, &sr)
		case kmsg.ConfigResourceTypeGroupConfig:
			if !c.Allows(opDescribeConfigs, groupResource, rr.ResourceName) {
				sr.ErrorCode = kerr.GroupAuthorizationFailed.Code
				break
			}
			s.share.configs.describe(rr, &sr) // share_configs.go
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

func (s *Server) describeTopicConfigs(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) error {
	t, err := s.data.store.Topic(rr.ResourceName)
	if err != nil {
		return err
	}
	var own map[string]string // the topic's own configs, by the image
	if mt, err := s.image().Topic(rr.ResourceName); err == nil && storage.TopicID(mt.ID) == t.ID {
		own = mt.Configs
	}
	for _, v := range t.Config().Values() {
		_, dynamic := own[v.Name]
		source := kmsg.ConfigSourceDefaultConfig
		if dynamic {
			source = kmsg.ConfigSourceDynamicTopicConfig
		}
		addConfig(rr, sr, v, false, !dynamic, source)
	}
	return nil
}

func (s *Server) describeBrokerConfigs(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource) error {
	if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(s.cfg.NodeID)) {
		return fmt.Errorf("%w: broker %s is not this broker (%d)", errInvalidRequest, rr.ResourceName, s.cfg.NodeID)
	}
	cfg := s.cfg
	for _, st := range cfg.settings() {
		addConfig(rr, sr, storage.ConfigValue{Name: st.name, Value: st.get()}, true, false, kmsg.ConfigSourceStaticBrokerConfig)
	}
	return nil
}

// addConfig adds v to sr if the request asks for it (every config when it
// names none).
func addConfig(rr kmsg.DescribeConfigsRequestResource, sr *kmsg.DescribeConfigsResponseResource, v storage.ConfigValue,
	readOnly, isDefault bool, source kmsg.ConfigSource) {
	if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, v.Name) {
		return
	}
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value = v.Name, kmsg.StringPtr(v.Value)
	c.ReadOnly, c.IsDefault, c.Source = readOnly, isDefault, source
	sr.Configs = append(sr.Configs, c)
}
