package server

// Dynamic broker configs (KIP-226, Kafka's DynamicBrokerConfig): the
// broker configs AlterConfigs and IncrementalAlterConfigs change on a
// running cluster, per broker (the resource named by its id) or for every
// broker (the cluster-wide default, the resource named ""), kept in the
// metadata log (metadata.ResourceConfigs) and applied live by every
// broker as it applies the log.
//
// # What is dynamic here
//
// The defaults of the topic configs this broker enforces, under their
// broker names (Kafka's DynamicLogConfig, the LogConfig synonyms):
// log.retention.ms, log.retention.bytes, message.max.bytes,
// min.insync.replicas, unclean.leader.election.enable, log.segment.bytes,
// log.roll.ms, log.cleanup.policy and the log cleaner's
// log.cleaner.min.cleanable.ratio, log.cleaner.min.compaction.lag.ms,
// log.cleaner.max.compaction.lag.ms and log.cleaner.delete.retention.ms.
// A topic without its own value sees a change at once: the storage's
// defaults are replaced and every topic's config is resolved again
// (package replica), so that the next append, retention sweep, acks=all
// check or cleaning applies it. The cluster default of
// unclean.leader.election.enable is the controller's: turned on, it
// elects every offline partition that then allows it (metadata.SetConfigs).
//
// The replication throttles' rates (KIP-73, Kafka's QuotaConfig):
// leader.replication.throttled.rate and follower.replication.throttled.rate,
// bytes per second, Long.MAX_VALUE (unthrottled) by default, which every
// broker applies to its replication quotas as it applies the log
// (replication_throttles.go).
//
// Kafka allows more dynamically (thread pools, connection limits,
// listeners, SSL keystores, the cleaner's threads and backoff, log.flush.*
// ...); this broker reads those only at start, and refuses a change to
// one it has with a message that says so, INVALID_REQUEST, as Kafka
// refuses a config that is not dynamic ("Cannot update these configs
// dynamically: Set(log.dirs)"); one Kafka changes dynamically that this
// broker does not have, and a name it does not know, are refused too,
// rather than kept and never applied.
//
// # Precedence
//
// A broker's own value overrides the cluster default, which overrides the
// static setting (the flag, or the properties file), which overrides
// Kafka's default for a config without a flag: DescribeConfigs names the
// source that won (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
// STATIC_BROKER_CONFIG, DEFAULT_CONFIG) and, with include_synonyms, lists
// the others under it (describe_synonyms.go).

import (
	"maps"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// topicSynonyms maps each dynamic broker config to the topic config it is
// the default of, as Kafka's LogConfig names their synonyms.
var topicSynonyms = map[string]string{
	"log.retention.ms":                  storage.ConfigRetentionMs,
	"log.retention.bytes":               storage.ConfigRetentionBytes,
	"message.max.bytes":                 storage.ConfigMaxMessageBytes,
	"min.insync.replicas":               storage.ConfigMinInsyncReplicas,
	"unclean.leader.election.enable":    storage.ConfigUncleanLeaderElection,
	"log.segment.bytes":                 storage.ConfigSegmentBytes,
	"log.roll.ms":                       storage.ConfigSegmentMs,
	"log.cleanup.policy":                storage.ConfigCleanupPolicy,
	"log.cleaner.min.cleanable.ratio":   storage.ConfigDirtyRatio,
	"log.cleaner.min.compaction.lag.ms": storage.ConfigMinCompactionLag,
	"log.cleaner.max.compaction.lag.ms": storage.ConfigMaxCompactionLag,
	"log.cleaner.delete.retention.ms":   storage.ConfigDeleteRetentionMs,
}

// brokerSynonyms is topicSynonyms the other way: a topic config's
// broker-level default.
var brokerSynonyms = func() map[string]string {
	m := make(map[string]string, len(topicSynonyms))
	for b, t := range topicSynonyms {
		m[t] = b
	}
	return m
}()

// kafkaDynamic are the broker configs Kafka changes dynamically
// (DynamicBrokerConfig.AllDynamicConfigs) that this broker has as flags
// but reads only at start.
var kafkaDynamic = map[string]bool{
	"advertised.listeners": true, "listeners": true, "log.cleaner.backoff.ms": true,
	"log.flush.interval.messages": true, "log.flush.interval.ms": true, "log.index.interval.bytes": true,
	"max.connections": true, "max.connections.per.ip": true, "sasl.enabled.mechanisms": true,
	"ssl.keystore.location": true, "ssl.truststore.location": true, "ssl.client.auth": true,
	"listener.security.protocol.map": true,
}

// kafkaDynamicAbsent are broker configs Kafka changes dynamically that
// this broker does not have at all (its thread pools, connection rates,
// the cleaner's I/O, the synonyms in other units), named so that a change to
// one is refused as what it is, not as an unknown name.
var kafkaDynamicAbsent = map[string]bool{
	"background.threads": true, "compression.type": true, "log.cleaner.dedupe.buffer.size": true,
	"log.cleaner.io.buffer.load.factor": true, "log.cleaner.io.buffer.size": true,
	"log.cleaner.io.max.bytes.per.second": true, "log.cleaner.threads": true, "log.index.size.max.bytes": true,
	"log.message.timestamp.type": true, "log.preallocate": true, "log.retention.hours": true,
	"log.retention.minutes": true, "log.roll.hours": true, "log.roll.jitter.ms": true,
	"log.segment.delete.delay.ms": true, "max.connection.creation.rate": true,
	"max.connections.per.ip.overrides": true, "metric.reporters": true, "num.io.threads": true,
	"num.network.threads": true, "num.recovery.threads.per.data.dir": true, "num.replica.fetchers": true,
	"producer.id.expiration.ms": true, "sasl.jaas.config": true, "transaction.partition.verification.enable": true,
}

// errBrokerConfig is wrapped by a broker config change this broker
// refuses, with Kafka's message (INVALID_REQUEST: ConfigAdminManager
// answers a broker config that fails its validation so, KAFKA-13609).
var errBrokerConfig = errInvalidRequest

// checkBrokerNames refuses the configs a broker resource's changes set
// (or append to, or subtract from) that this broker cannot change: those
// Kafka reads only at start (Kafka's message), those Kafka changes
// dynamically but this broker does not, and those it does not know. A
// DELETE passes whatever its name: it removes nothing that is not there.
func (s *Server) checkBrokerNames(changes []metadata.ConfigChange) error {
	flags := make(map[string]bool)
	for _, st := range s.cfg.settings() {
		flags[st.name] = true
	}
	var static, notHere, absent, unknown []string
	for _, c := range changes {
		switch {
		case c.Op == metadata.ConfigDelete || topicSynonyms[c.Name] != "" || throttleRates[c.Name]:
		case kafkaDynamic[c.Name]:
			notHere = append(notHere, c.Name)
		case kafkaDynamicAbsent[c.Name]:
			absent = append(absent, c.Name)
		case flags[c.Name]:
			static = append(static, c.Name)
		default:
			unknown = append(unknown, c.Name)
		}
	}
	set := func(names []string) string {
		slices.Sort(names)
		return "Set(" + strings.Join(names, ", ") + ")"
	}
	switch {
	case len(static) > 0:
		return kafkaErrorf(errBrokerConfig, "Cannot update these configs dynamically: %s", set(static))
	case len(notHere) > 0:
		return kafkaErrorf(errBrokerConfig, "Cannot update these configs dynamically: %s: Kafka can, this broker reads them only at start "+
			"(set its flag --%s and restart it)", set(notHere), notHere[0])
	case len(absent) > 0:
		return kafkaErrorf(errBrokerConfig, "Cannot update these configs dynamically: %s: Kafka can, this broker does not have them",
			set(absent))
	case len(unknown) > 0:
		return kafkaErrorf(errBrokerConfig, "Unknown broker configs: %s: this broker does not have them", set(unknown))
	}
	return nil
}

// checkBrokerValues refuses a value of configs, a broker resource's, that
// its topic config would refuse, with the message Kafka's ConfigDef gives
// ("Invalid value x for configuration log.retention.ms: ..."), and a name
// that is not dynamic here (checkBrokerNames, for configs the log holds
// already: a broker resource's whole set is checked on each change).
func (s *Server) checkBrokerValues(configs map[string]string) error {
	cfg := storage.DefaultTopicConfig()
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		v := configs[name]
		if throttleRates[name] {
			if _, err := parseThrottleRate(name, v); err != nil {
				return err
			}
			continue
		}
		topic, ok := topicSynonyms[name]
		if !ok {
			return s.checkBrokerNames([]metadata.ConfigChange{{Name: name, Op: metadata.ConfigSet}})
		}
		if _, err := cfg.With(topic, &v); err != nil {
			reason := strings.TrimPrefix(err.Error(), storage.ErrInvalidConfig.Error()+": ")
			return kafkaErrorf(errBrokerConfig, "Invalid value %s for configuration %s: %s", v, name, reason)
		}
	}
	return nil
}

// staticTopicDefaults returns the topic configs' defaults cfg's flags
// give: the broker's for those it has a log.* setting of, Kafka's for
// the others (the compaction configs).
func staticTopicDefaults(cfg Config) storage.TopicConfig {
	defaults := storage.DefaultTopicConfig()
	defaults.Retention, defaults.RetentionBytes = cfg.LogRetention, cfg.LogRetentionBytes
	defaults.MaxMessageBytes, defaults.MinInsyncReplicas = cfg.MessageMaxBytes, cfg.MinInsyncReplicas
	defaults.UncleanLeaderElection = cfg.UncleanLeaderElection
	// A topic's segment.bytes and segment.ms default to the broker's
	// log.segment.bytes and log.roll.ms, as in Kafka; a topic's own roll
	// its segments in log.dirs (the log cleaner cleans sealed ones).
	if cfg.LogSegmentBytes > 0 && cfg.LogSegmentBytes <= 1<<31-1 {
		defaults.SegmentBytes = int32(cfg.LogSegmentBytes)
	}
	if cfg.LogRoll > 0 {
		defaults.SegmentMs = cfg.LogRoll
	}
	return defaults
}

// topicDefaults returns the topic configs' defaults on this broker under
// im: the static ones, with each dynamic broker config im holds for this
// broker (its own, else the cluster's default) in place of its topic
// config's. A value the log holds that this broker refuses all the same
// (the controller checked it) is left out, and logged.
func (s *Server) topicDefaults(im *metadata.Image) storage.TopicConfig {
	cfg := staticTopicDefaults(s.cfg)
	for _, name := range slices.Sorted(maps.Keys(topicSynonyms)) {
		v, _, ok := im.BrokerConfig(s.cfg.NodeID, name)
		if !ok {
			continue
		}
		next, err := cfg.With(topicSynonyms[name], &v)
		if err != nil {
			s.log.Warn("a dynamic broker config of the metadata log is left at its static value", zap.String("config", name), zap.Error(err))
			continue
		}
		cfg = next
	}
	return cfg
}

// followBrokerConfigs applies the dynamic broker configs of after, the
// image a record (rec, nil after a snapshot) made: the replication
// throttles' rates at once (replication_throttles.go); the storage's topic
// defaults are replaced when they changed, before the record's topics are
// applied (package replica), so that a topic it creates takes the new
// ones; every other topic takes them after (refreshTopicConfigs). It
// reports whether they changed.
func (s *Server) followBrokerConfigs(after *metadata.Image, rec *metadata.Record) bool {
	if rec != nil && !slices.ContainsFunc(rec.Configs, func(rc metadata.ResourceConfigs) bool {
		return rc.Resource.Type == metadata.ConfigResourceBroker
	}) {
		return false
	}
	s.followThrottleRates(after)
	next := s.topicDefaults(after)
	if next == s.data.store.TopicDefaults() {
		return false
	}
	s.data.store.SetTopicDefaults(next)
	s.log.Info("changed the topic configs' defaults (dynamic broker configs)")
	return true
}
