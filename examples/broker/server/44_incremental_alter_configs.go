package server

// IncrementalAlterConfigs: v0-v1.
//
// Changes a resource's dynamic configs one by one (KIP-339): SET (0)
// gives a config a value, DELETE (1) removes its own value, so that the
// broker's default applies again; APPEND (2) and SUBTRACT (3) apply to
// list configs only, cleanup.policy here (adding or removing compact or
// delete, from the default delete when the topic has none of its own):
// on another they are INVALID_CONFIG ("Can't APPEND to key retention.ms
// because its type is not LIST."), as Kafka's controller answers for a
// config that is not a list. An unknown operation is INVALID_REQUEST.
// validate_only checks
// everything and changes nothing.
//
// Everything else is AlterConfigs' (33_alter_configs.go): the topic
// configs enforced and their errors (INVALID_CONFIG, checked on the
// configs the changes leave, before the topic's existence;
// UNKNOWN_TOPIC_OR_PARTITION), a resource listed twice, a config named
// twice and a null value but for a DELETE (INVALID_REQUEST, Kafka's
// messages), the dynamic broker configs of a broker resource (its own or
// the cluster's default; a DELETE takes any name, removing nothing that
// is not there; log.cleanup.policy is a list) and the share-group configs
// of a GROUP resource, the decision by the active controller in one
// record, forwarded from any other broker, applied live by every broker
// and kept in a broker alone's log.dirs, unclean.leader.election.enable
// acted on at once, and the answer once the record is applied here.
// BROKER_LOGGER resources (KIP-412's log levels) are INVALID_REQUEST:
// this broker's logger has no runtime levels.
//
// Authorization (authz.go): ALTER_CONFIGS on the topic, else
// TOPIC_AUTHORIZATION_FAILED whether it exists or not; on the cluster for
// a broker resource, else CLUSTER_AUTHORIZATION_FAILED; on the group
// for a group resource, else GROUP_AUTHORIZATION_FAILED.
//
// Not implemented: alter-config policies, sensitive configs, and
// throttling.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.IncrementalAlterConfigs, 0, 1, (*Server).handleIncrementalAlterConfigs) }

func (s *Server) handleIncrementalAlterConfigs(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.IncrementalAlterConfigsRequest)
	res := make([]configResource, len(req.Resources))
	for i, rr := range req.Resources {
		res[i] = configResource{typ: rr.ResourceType, name: rr.ResourceName}
		for _, c := range rr.Configs {
			res[i].changes = append(res[i].changes, metadata.ConfigChange{Name: c.Name, Op: metadata.ConfigOp(c.Op), Value: c.Value})
		}
	}
	s.serveConfigs(r, res, true, req.ValidateOnly, configsAPI{
		forward: func(kept []int) kmsg.Request {
			fwd := *req
			fwd.Resources = pick(req.Resources, kept)
			return &fwd
		},
		get: func(resp kmsg.Response) []kmsg.AlterConfigsResponseResource {
			var out []kmsg.AlterConfigsResponseResource
			for _, sr := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
				out = append(out, kmsg.AlterConfigsResponseResource(sr))
			}
			return out
		},
		set: func(resp kmsg.Response, rs []kmsg.AlterConfigsResponseResource) {
			ic := resp.(*kmsg.IncrementalAlterConfigsResponse)
			ic.Resources = ic.Resources[:0]
			for _, sr := range rs {
				ic.Resources = append(ic.Resources, kmsg.IncrementalAlterConfigsResponseResource(sr))
			}
		},
	})
}
