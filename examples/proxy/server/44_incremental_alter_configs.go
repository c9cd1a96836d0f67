package server

// IncrementalAlterConfigs: v0-v1, as upstream serves it.
//
// Routed, split and merged as AlterConfigs is (33_alter_configs.go,
// configs_split.go): a topic or a group resource (KIP-932's share-group
// configs, such as share.auto.offset.reset) goes to any upstream broker,
// a broker or broker-logger resource to the upstream broker it names
// when the metadata lists it; a request spanning several brokers is split
// and merged back in request order, and a piece that fails in transport
// closes the client's connection (route.go).
//
// Authorization (authz.go): ALTER_CONFIGS on each resource's topic
// (TOPIC_AUTHORIZATION_FAILED), or on the cluster for a broker, a broker
// logger or client metrics (CLUSTER_AUTHORIZATION_FAILED), or on the
// group (GROUP_AUTHORIZATION_FAILED); a denied resource is not
// forwarded, and a resource type the proxy does not know answers
// INVALID_REQUEST.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	serve(kmsg.IncrementalAlterConfigs, 0, 1, incrementalAlterConfigs.serve).Handler.check =
		incrementalAlterConfigs.check(kmsg.ACLOperationAlterConfigs)
}

// incrementalAlterConfigs reads and makes IncrementalAlterConfigs
// requests and answers.
var incrementalAlterConfigs = newConfigAPI(
	func(q *kmsg.IncrementalAlterConfigsRequest) *[]kmsg.IncrementalAlterConfigsRequestResource {
		return &q.Resources
	},
	func(m *kmsg.IncrementalAlterConfigsResponse) *[]kmsg.IncrementalAlterConfigsResponseResource {
		return &m.Resources
	},
	func(r kmsg.IncrementalAlterConfigsRequestResource) configKey {
		return configKey{r.ResourceType, r.ResourceName}
	},
	func(r kmsg.IncrementalAlterConfigsResponseResource) configKey {
		return configKey{r.ResourceType, r.ResourceName}
	},
	func(k configKey, code int16) kmsg.IncrementalAlterConfigsResponseResource {
		return kmsg.IncrementalAlterConfigsResponseResource{ResourceType: k.typ, ResourceName: k.name, ErrorCode: code}
	},
)
