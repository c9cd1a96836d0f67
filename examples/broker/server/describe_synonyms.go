package server

// The levels a broker config's value comes from, as DescribeConfigs
// lists them in its synonyms (KIP-226): this broker's own dynamic value,
// the cluster-wide dynamic default, the static setting (a flag, or the
// properties file), and Kafka's default for a dynamic config this broker
// has no flag of; the first present wins (broker_configs.go).

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// configLevels resolves broker configs against one image.
type configLevels struct {
	own, defaults map[string]string // this broker's and the cluster's dynamic configs
	static        map[string]string // the flags' values, by name
	kafka         map[string]string // the topic configs' Kafka defaults, by topic name
}

// newConfigLevels reads im's dynamic broker configs for this broker and
// the static ones. O(configs).
func (s *Server) newConfigLevels(im *metadata.Image) configLevels {
	l := configLevels{own: im.Configs(metadata.BrokerResource(s.cfg.NodeID)), defaults: im.Configs(metadata.ClusterDefault),
		static: make(map[string]string), kafka: make(map[string]string)}
	cfg := s.cfg
	for _, st := range cfg.settings() {
		l.static[st.name] = st.get()
	}
	for _, v := range storage.DefaultTopicConfig().Values() {
		l.kafka[v.Name] = v.Value
	}
	return l
}

// of returns broker config name's levels, the winner first; never empty
// for a flag or a dynamic config.
func (l configLevels) of(name string) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	if v, ok := l.own[name]; ok {
		out = append(out, synonym(name, v, kmsg.ConfigSourceDynamicBrokerConfig))
	}
	if v, ok := l.defaults[name]; ok {
		out = append(out, synonym(name, v, kmsg.ConfigSourceDynamicDefaultBrokerConfig))
	}
	if v, ok := l.static[name]; ok {
		out = append(out, synonym(name, v, kmsg.ConfigSourceStaticBrokerConfig))
	} else if topic, ok := topicSynonyms[name]; ok {
		out = append(out, synonym(name, l.kafka[topic], kmsg.ConfigSourceDefaultConfig))
	} else if throttleRates[name] {
		out = append(out, synonym(name, strconv.FormatInt(unthrottled, 10), kmsg.ConfigSourceDefaultConfig))
	}
	return out
}

// synonym returns one level of a config.
func synonym(name, value string, source kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	syn.Name, syn.Value, syn.Source = name, kmsg.StringPtr(value), source
	return syn
}
