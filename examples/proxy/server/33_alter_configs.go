package server

// AlterConfigs: v0-v2, as upstream serves it.
//
// Routed as DescribeConfigs is (configs_split.go): a topic or a group
// resource goes to any upstream broker, which hands it to its controller;
// a broker resource (or a broker logger) names a broker id, and goes to
// that upstream broker when the metadata lists it, since a broker changes
// only its own configs, else to any broker, which answers as Kafka does
// for a broker resource that is not its own (the cluster-wide default,
// named "", goes to any broker). A request whose resources all go to one
// broker is forwarded as it is, validate_only with it; one that spans
// several is split and merged back in request order. A piece that fails
// in transport closes the client's connection (route.go): the pieces
// that reached their brokers may have been applied, as with a broker
// that went away before it answered.
//
// Authorization (authz.go): ALTER_CONFIGS on each resource's topic
// (TOPIC_AUTHORIZATION_FAILED), or on the cluster for a broker, a broker
// logger or client metrics (CLUSTER_AUTHORIZATION_FAILED), or on the
// group (GROUP_AUTHORIZATION_FAILED); a denied resource is not
// forwarded, and a resource type the proxy does not know answers
// INVALID_REQUEST.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	serve(kmsg.AlterConfigs, 0, 2, alterConfigs.serve).Handler.check = alterConfigs.check(kmsg.ACLOperationAlterConfigs)
}

// alterConfigs reads and makes AlterConfigs requests and answers.
var alterConfigs = newConfigAPI(
	func(q *kmsg.AlterConfigsRequest) *[]kmsg.AlterConfigsRequestResource { return &q.Resources },
	func(m *kmsg.AlterConfigsResponse) *[]kmsg.AlterConfigsResponseResource { return &m.Resources },
	func(r kmsg.AlterConfigsRequestResource) configKey { return configKey{r.ResourceType, r.ResourceName} },
	func(r kmsg.AlterConfigsResponseResource) configKey { return configKey{r.ResourceType, r.ResourceName} },
	func(k configKey, code int16) kmsg.AlterConfigsResponseResource {
		return kmsg.AlterConfigsResponseResource{ResourceType: k.typ, ResourceName: k.name, ErrorCode: code}
	},
)
