package server

// AlterConfigs: v0-v2.
//
// Replaces a resource's whole set of dynamic configs with those given
// (Kafka's deprecated API: a config not named loses its own value and
// takes the broker's default again; IncrementalAlterConfigs changes one
// at a time); validate_only checks everything and changes nothing.
//
// A topic resource (type 2) takes the five topic configs this broker
// enforces (retention.ms, retention.bytes, max.message.bytes,
// min.insync.replicas, unclean.leader.election.enable): any other name,
// or a value out of range, is INVALID_CONFIG with storage.TopicConfig.With's
// message; values are checked before the topic's existence, as Kafka's
// controller checks them, and an unknown topic is then
// UNKNOWN_TOPIC_OR_PARTITION. A resource listed twice is INVALID_REQUEST
// ("Each resource must appear at most once.", every listing), as are a
// config named twice in one resource and a null value (Kafka's messages).
//
// A broker resource (type 4), by id or "" for the cluster-wide default,
// takes the dynamic broker configs (broker_configs.go): the broker-level
// defaults of the topic configs, applied live by every broker (a broker's
// own value over the cluster's default over the static flag). A config
// Kafka reads only at start is refused INVALID_REQUEST with Kafka's
// message ("Cannot update these configs dynamically: Set(log.dirs)"), as
// are one Kafka changes dynamically but this broker does not (the message
// names its flag), one it does not know, and a value out of range
// ("Invalid value x for configuration log.retention.ms: ..."): Kafka's
// broker answers its own validation so (KAFKA-13609). The resource must
// name this broker's id, or be empty (INVALID_REQUEST, with Kafka's
// message). A GROUP resource (type 32) takes the share-group configs
// (share_configs.go), INVALID_CONFIG for an unknown one or a bad value.
// Other resource types are INVALID_REQUEST.
//
// Only the active controller decides the resources (a broker that is not
// forwards them to it, as Kafka 4's brokers do, once it has answered the
// rest itself): the request's resources are decided against one image,
// and their new configs are one record of the metadata log, which every
// broker applies. A topic's storage config changes live, for all its
// partitions (package replica), so that the next produce sees a new
// max.message.bytes, the next retention sweep a new retention, the next
// acks=all a new min.insync.replicas, and a broker alone with log.dirs
// keeps it in its catalog; a broker resource's configs change the
// defaults of every topic without its own value, likewise; a group's are
// read by the share fetch path from the image. As a topic's, a broker
// resource's whole set is replaced: one that names no config loses its
// dynamic values. unclean.leader.election.enable turned on elects the
// topic's offline partitions uncleanly in the same record, and its
// cluster-wide default turned on those of every topic without its own.
// The answer comes once the record is applied here; DescribeConfigs then
// shows each config the topic has of its own as DYNAMIC_TOPIC_CONFIG.
//
// Authorization (authz.go): ALTER_CONFIGS on the topic, else
// TOPIC_AUTHORIZATION_FAILED whether it exists or not; on the cluster for
// a broker resource, else CLUSTER_AUTHORIZATION_FAILED; on the group
// for a group resource, else GROUP_AUTHORIZATION_FAILED; checked by the
// broker the client sent the request to, before it forwards the rest.
//
// Not implemented: alter-config policies, sensitive configs, and
// throttling.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.AlterConfigs, 0, 2, (*Server).handleAlterConfigs) }

func (s *Server) handleAlterConfigs(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.AlterConfigsRequest)
	res := make([]configResource, len(req.Resources))
	for i, rr := range req.Resources {
		res[i] = configResource{typ: rr.ResourceType, name: rr.ResourceName}
		for _, c := range rr.Configs {
			res[i].changes = append(res[i].changes, metadata.ConfigChange{Name: c.Name, Op: metadata.ConfigSet, Value: c.Value})
		}
	}
	s.serveConfigs(r, res, false, req.ValidateOnly, configsAPI{
		forward: func(kept []int) kmsg.Request {
			fwd := *req
			fwd.Resources = pick(req.Resources, kept)
			return &fwd
		},
		get: func(resp kmsg.Response) []kmsg.AlterConfigsResponseResource {
			return resp.(*kmsg.AlterConfigsResponse).Resources
		},
		set: func(resp kmsg.Response, rs []kmsg.AlterConfigsResponseResource) {
			resp.(*kmsg.AlterConfigsResponse).Resources = rs
		},
	})
}
