package server

// DescribeConfigs: v0-v4, as upstream serves it.
//
// A topic resource goes to any upstream broker; a broker resource (or a
// broker logger) names a broker id, and goes to that upstream broker when
// the metadata lists it, else to any broker, which answers as Kafka does
// for a broker resource that is not its own. A request whose resources
// all go to one broker is forwarded as it is; one that spans several is
// split and merged back in request order (configs_split.go). A piece that
// fails in transport closes the client's connection (route.go).
//
// Authorization (authz.go): DESCRIBE_CONFIGS on each resource's topic
// (TOPIC_AUTHORIZATION_FAILED), or on the cluster for a broker, a broker
// logger or client metrics (CLUSTER_AUTHORIZATION_FAILED), or on the
// group (GROUP_AUTHORIZATION_FAILED); a denied resource is not
// forwarded, and a resource type the proxy does not know answers
// INVALID_REQUEST.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	serve(kmsg.DescribeConfigs, 0, 4, describeConfigs.serve).Handler.check = describeConfigs.check(kmsg.ACLOperationDescribeConfigs)
}

// describeConfigs reads and makes DescribeConfigs requests and answers.
var describeConfigs = newConfigAPI(
	func(q *kmsg.DescribeConfigsRequest) *[]kmsg.DescribeConfigsRequestResource { return &q.Resources },
	func(m *kmsg.DescribeConfigsResponse) *[]kmsg.DescribeConfigsResponseResource { return &m.Resources },
	func(r kmsg.DescribeConfigsRequestResource) configKey {
		return configKey{r.ResourceType, r.ResourceName}
	},
	func(r kmsg.DescribeConfigsResponseResource) configKey {
		return configKey{r.ResourceType, r.ResourceName}
	},
	func(k configKey, code int16) kmsg.DescribeConfigsResponseResource {
		return kmsg.DescribeConfigsResponseResource{ResourceType: k.typ, ResourceName: k.name, ErrorCode: code}
	},
)
