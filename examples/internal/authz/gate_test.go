package authz

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

// allow is an ALLOW binding of op on a LITERAL resource, from any host.
func allow(rt kmsg.ACLResourceType, name, principal string, op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: principal, Host: acl.Wildcard, Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

// aliceWith returns User:alice as an authorizer holding bindings checks
// her, from 10.0.0.1.
func aliceWith(t *testing.T, bindings ...acl.Binding) Access {
	t.Helper()
	a, err := acl.New()
	require.NoError(t, err)
	_, err = a.Add(bindings...)
	require.NoError(t, err)
	return ForPrincipal(a, "User:alice", "10.0.0.1")
}

// transactionalBatch is a batch header with the transactional attribute
// and producer id 7.
func transactionalBatch() []byte {
	b := kmsg.RecordBatch{Magic: 2, Attributes: 0x10, ProducerID: 7, Length: 49}
	return b.AppendTo(nil)
}

func TestGate(t *testing.T) {
	produce := kmsg.NewPtrProduceRequest()
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = transactionalBatch()
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	produce.TransactionID = kmsg.StringPtr("tx")

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = "readers"
	fetchOld := kmsg.NewPtrOffsetFetchRequest()
	fetchOld.SetVersion(7)
	fetchOld.Group = "readers"
	fetchNew := kmsg.NewPtrOffsetFetchRequest()
	fetchNew.SetVersion(8)
	idem := kmsg.NewPtrInitProducerIDRequest()

	tests := []struct {
		name     string
		req      kmsg.Request
		bindings []acl.Binding
		want     int16
	}{
		{name: "a transactional produce needs its id", req: produce, want: kerr.TransactionalIDAuthorizationFailed.Code},
		{name: "a transactional produce with its id", req: produce,
			bindings: []acl.Binding{allow(kmsg.ACLResourceTypeTransactionalId, "tx", "User:alice", kmsg.ACLOperationWrite)}},
		{name: "a join needs READ on its group", req: join, want: kerr.GroupAuthorizationFailed.Code},
		{name: "a join with READ", req: join, bindings: []acl.Binding{allow(kmsg.ACLResourceTypeGroup, "readers", "User:alice", kmsg.ACLOperationRead)}},
		{name: "DESCRIBE is no READ", req: join, bindings: []acl.Binding{allow(kmsg.ACLResourceTypeGroup, "readers", "User:alice", kmsg.ACLOperationDescribe)},
			want: kerr.GroupAuthorizationFailed.Code},
		{name: "an OffsetFetch before v8 needs DESCRIBE on its group", req: fetchOld, want: kerr.GroupAuthorizationFailed.Code},
		{name: "an OffsetFetch of v8+ is checked per group, in the handler", req: fetchNew},
		{name: "an idempotent producer needs WRITE somewhere", req: idem, want: kerr.ClusterAuthorizationFailed.Code},
		{name: "KIP-679: WRITE on a topic is enough", req: idem,
			bindings: []acl.Binding{allow(kmsg.ACLResourceTypeTopic, "orders", "User:alice", kmsg.ACLOperationWrite)}},
		{name: "the ACL APIs need the cluster", req: kmsg.NewPtrCreateACLsRequest(), want: kerr.ClusterAuthorizationFailed.Code},
		{name: "DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster", req: kmsg.NewPtrDescribeClientQuotasRequest(),
			want: kerr.ClusterAuthorizationFailed.Code},
		{name: "DescribeClientQuotas with it", req: kmsg.NewPtrDescribeClientQuotasRequest(),
			bindings: []acl.Binding{allow(kmsg.ACLResourceTypeCluster, acl.ClusterName, "User:alice", kmsg.ACLOperationDescribeConfigs)}},
		{name: "AlterClientQuotas needs ALTER_CONFIGS on the cluster", req: kmsg.NewPtrAlterClientQuotasRequest(),
			bindings: []acl.Binding{allow(kmsg.ACLResourceTypeCluster, acl.ClusterName, "User:alice", kmsg.ACLOperationAlter)},
			want:     kerr.ClusterAuthorizationFailed.Code},
		{name: "AlterClientQuotas with it", req: kmsg.NewPtrAlterClientQuotasRequest(),
			bindings: []acl.Binding{allow(kmsg.ACLResourceTypeCluster, acl.ClusterName, "User:alice", kmsg.ACLOperationAlterConfigs)}},
		{name: "an API checked per resource passes the gate", req: kmsg.NewPtrFetchRequest()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Gate(aliceWith(t, tt.bindings...), tt.req))
			assert.Zero(t, Gate(Access{}, tt.req), "no authorizer: no check")
		})
	}
}

func TestTransactionalBatches(t *testing.T) {
	p := kmsg.NewPtrProduceRequest()
	pt := kmsg.NewProduceRequestTopic()
	pp := kmsg.NewProduceRequestTopicPartition()
	plain := kmsg.RecordBatch{Magic: 2, ProducerID: 7, Length: 49}
	pp.Records = plain.AppendTo(nil)
	pt.Partitions = append(pt.Partitions, pp)
	p.Topics = append(p.Topics, pt)
	assert.False(t, transactionalBatches(p), "an idempotent batch")
	pp.Records = []byte{1, 2, 3}
	p.Topics[0].Partitions = append(p.Topics[0].Partitions, pp)
	assert.False(t, transactionalBatches(p), "no header")
	pp.Records = transactionalBatch()
	p.Topics[0].Partitions = append(p.Topics[0].Partitions, pp)
	assert.True(t, transactionalBatches(p))
}

func TestErrorResponse(t *testing.T) {
	commit := kmsg.NewPtrOffsetCommitRequest()
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic, ct.Partitions = "orders", make([]kmsg.OffsetCommitRequestTopicPartition, 2)
	commit.Topics = append(commit.Topics, ct)
	resp := ErrorResponse(commit, kerr.GroupAuthorizationFailed.Code).(*kmsg.OffsetCommitResponse)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 2)
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, resp.Topics[0].Partitions[1].ErrorCode, "every partition")

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{"a", "b"}
	fresp := ErrorResponse(fc, kerr.GroupAuthorizationFailed.Code).(*kmsg.FindCoordinatorResponse)
	require.Len(t, fresp.Coordinators, 2)
	assert.Equal(t, "b", fresp.Coordinators[1].Key)
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, fresp.Coordinators[1].ErrorCode, "every key")

	aq := kmsg.NewPtrAlterClientQuotasRequest()
	alice := "alice"
	aq.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: &alice}}},
		{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id"}}}}
	qresp := ErrorResponse(aq, kerr.ClusterAuthorizationFailed.Code).(*kmsg.AlterClientQuotasResponse)
	require.Len(t, qresp.Entries, 2)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, qresp.Entries[1].ErrorCode, "every entity")
	assert.Equal(t, []kmsg.AlterClientQuotasResponseEntryEntity{{Type: "user", Name: &alice}}, qresp.Entries[0].Entity, "named as asked")
	// The forwarded config APIs: every resource, named as asked.
	ac := kmsg.NewPtrAlterConfigsRequest()
	ac.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"}}
	aresp := ErrorResponse(ac, kerr.NotController.Code).(*kmsg.AlterConfigsResponse)
	require.Len(t, aresp.Resources, 1)
	assert.Equal(t, kmsg.ConfigResourceTypeTopic, aresp.Resources[0].ResourceType)
	assert.Equal(t, "t", aresp.Resources[0].ResourceName)
	assert.Equal(t, kerr.NotController.Code, aresp.Resources[0].ErrorCode)
	ic := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ic.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "a"},
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "b"}}
	iresp := ErrorResponse(ic, kerr.NotController.Code).(*kmsg.IncrementalAlterConfigsResponse)
	require.Len(t, iresp.Resources, 2)
	assert.Equal(t, "b", iresp.Resources[1].ResourceName)
	assert.Equal(t, kerr.NotController.Code, iresp.Resources[1].ErrorCode)
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name, class, supers string
		on                  bool
		err                 string
	}{
		{name: "none, the default"},
		{name: "Kafka's name", class: StandardAuthorizer, supers: "User:admin; User:CN=broker,O=example", on: true},
		{name: "short name", class: ShortName, on: true},
		{name: "ZooKeeper's", class: ZooKeeperAuthorizer, err: "removed in Kafka 4"},
		{name: "unknown", class: "com.example.Authorizer", err: "authorizer.class.name"},
		{name: "a super user that is no principal", class: ShortName, supers: "admin", err: "super.users"},
		{name: "super users without an authorizer are ignored, as Kafka", supers: "admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, on, err := Options(tt.class, tt.supers, false)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.on, on)
		})
	}
	assert.Equal(t, []string{"User:admin", "User:ops"}, SuperUsers(" User:admin;;User:ops; "))
}
