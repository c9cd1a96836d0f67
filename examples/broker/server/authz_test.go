package server

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
	"github.com/gopurgatory/purgatory/examples/internal/sasl"
)

// A raw test connection is PLAINTEXT: its principal is User:ANONYMOUS.

// newAuthzServer starts a broker with an authorizer, no super user and no
// binding: a raw connection may do nothing.
func newAuthzServer(t *testing.T, tweak ...func(*Config)) *Server {
	t.Helper()
	return newTestServer(t, append([]func(*Config){func(c *Config) { c.Authorizer = "acl" }}, tweak...)...)
}

// allow is an ALLOW binding of op on a LITERAL resource, from any host.
func allow(rt kmsg.ACLResourceType, name, principal string, op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: principal, Host: acl.Wildcard, Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

// grant commits bindings through the broker's controller.
func grant(t *testing.T, s *Server, bindings ...acl.Binding) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errs, err := s.ctrl().CreateACLs(ctx, bindings)
	require.NoError(t, err)
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func TestAuthorizerConfig(t *testing.T) {
	tests := []struct {
		name       string
		authorizer string
		superUsers string
		cluster    string
		err        string // "" when valid
	}{
		{name: "none, the default"},
		{name: "Kafka's name", authorizer: authz.StandardAuthorizer, superUsers: "User:admin; User:CN=broker,O=example"},
		{name: "short name", authorizer: "acl"},
		{name: "ZooKeeper's", authorizer: authz.ZooKeeperAuthorizer, err: "removed in Kafka 4"},
		{name: "unknown", authorizer: "com.example.Authorizer", err: "authorizer.class.name"},
		{name: "a super user that is no principal", authorizer: "acl", superUsers: "admin", err: "super.users"},
		{name: "a cluster without User:ANONYMOUS", authorizer: "acl", superUsers: "User:admin",
			cluster: "1@127.0.0.1:19092,2@127.0.0.1:19093", err: "User:ANONYMOUS"},
		{name: "a cluster with User:ANONYMOUS", authorizer: "acl", superUsers: "User:ANONYMOUS;User:admin",
			cluster: "1@127.0.0.1:19092,2@127.0.0.1:19093"},
		{name: "super users without an authorizer are ignored, as Kafka", superUsers: "admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			cfg.Authorizer, cfg.SuperUsers, cfg.Cluster = tt.authorizer, tt.superUsers, tt.cluster
			err := cfg.validate()
			if tt.err == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tt.err)
			}
		})
	}

	cfg := Default()
	require.NoError(t, cfg.LoadProperties(strings.NewReader("authorizer.class.name="+authz.StandardAuthorizer+
		"\nsuper.users=User:admin;User:ops\nallow.everyone.if.no.acl.found=true\n")))
	assert.Equal(t, authz.StandardAuthorizer, cfg.Authorizer)
	assert.Equal(t, []string{"User:admin", "User:ops"}, authz.SuperUsers(cfg.SuperUsers))
	assert.True(t, cfg.AllowEveryoneIfNoACL)
	assert.False(t, Default().AllowEveryoneIfNoACL, "Kafka's default")
}

// TestACLAPIsWithoutAuthorizer: Kafka's answer, SECURITY_DISABLED with its
// message, wherever each response carries an error.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	c := dialRaw(t, newTestServer(t))
	for v := int16(1); v <= 3; v++ {
		d := kmsg.NewPtrDescribeACLsRequest()
		d.SetVersion(v)
		d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = 1, 1, 1, 1 // ANY
		dr := c.RoundTrip(d).(*kmsg.DescribeACLsResponse)
		assert.Equal(t, kerr.SecurityDisabled.Code, dr.ErrorCode, "v%d", v)
		require.NotNil(t, dr.ErrorMessage)
		assert.Equal(t, "No Authorizer is configured.", *dr.ErrorMessage)

		cr := kmsg.NewPtrCreateACLsRequest()
		cr.SetVersion(v)
		cr.Creations = make([]kmsg.CreateACLsRequestCreation, 2)
		cresp := c.RoundTrip(cr).(*kmsg.CreateACLsResponse)
		require.Len(t, cresp.Results, 2)
		assert.Equal(t, kerr.SecurityDisabled.Code, cresp.Results[1].ErrorCode)

		del := kmsg.NewPtrDeleteACLsRequest()
		del.SetVersion(v)
		del.Filters = make([]kmsg.DeleteACLsRequestFilter, 1)
		dresp := c.RoundTrip(del).(*kmsg.DeleteACLsResponse)
		require.Len(t, dresp.Results, 1)
		assert.Equal(t, kerr.SecurityDisabled.Code, dresp.Results[0].ErrorCode)
	}
}

func creation(b acl.Binding) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
	c.Principal, c.Host, c.Operation, c.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
	return c
}

// TestCreateACLsValidation: each creation is checked on its own, as
// Kafka's AclControlManager.validateNewAcl and AclApis check it, and the
// valid ones are committed once each.
func TestCreateACLsValidation(t *testing.T) {
	s := newAuthzServer(t, func(c *Config) { c.SuperUsers = anonymous })
	c := dialRaw(t, s)
	read := allow(kmsg.ACLResourceTypeTopic, "orders", "User:alice", kmsg.ACLOperationRead)
	with := func(f func(*acl.Binding)) acl.Binding {
		b := read
		f(&b)
		return b
	}
	tests := []struct {
		name    string
		binding acl.Binding
		code    int16
	}{
		{"valid", read, 0},
		{"the same again", read, 0},
		{"prefixed", with(func(b *acl.Binding) { b.PatternType = kmsg.ACLResourcePatternTypePrefixed; b.ResourceName = "pay" }), 0},
		{"the cluster", with(func(b *acl.Binding) {
			b.ResourceType, b.ResourceName, b.Operation = kmsg.ACLResourceTypeCluster, acl.ClusterName, kmsg.ACLOperationAlter
		}), 0},
		{"empty name", with(func(b *acl.Binding) { b.ResourceName = "" }), kerr.InvalidRequest.Code},
		{"a cluster not named kafka-cluster", with(func(b *acl.Binding) { b.ResourceType = kmsg.ACLResourceTypeCluster }), kerr.InvalidRequest.Code},
		{"resource type ANY", with(func(b *acl.Binding) { b.ResourceType = kmsg.ACLResourceTypeAny }), kerr.InvalidRequest.Code},
		{"pattern MATCH", with(func(b *acl.Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch }), kerr.InvalidRequest.Code},
		{"operation UNKNOWN", with(func(b *acl.Binding) { b.Operation = kmsg.ACLOperationUnknown }), kerr.InvalidRequest.Code},
		{"permission ANY", with(func(b *acl.Binding) { b.Permission = kmsg.ACLPermissionTypeAny }), kerr.InvalidRequest.Code},
		{"no principal type", with(func(b *acl.Binding) { b.Principal = "alice" }), kerr.InvalidRequest.Code},
		{"a host name", with(func(b *acl.Binding) { b.Host = "client.example.com" }), kerr.InvalidRequest.Code},
	}
	req := kmsg.NewPtrCreateACLsRequest()
	req.SetVersion(3)
	for _, tt := range tests {
		req.Creations = append(req.Creations, creation(tt.binding))
	}
	resp := c.RoundTrip(req).(*kmsg.CreateACLsResponse)
	require.Len(t, resp.Results, len(tests))
	for i, tt := range tests {
		assert.Equal(t, tt.code, resp.Results[i].ErrorCode, tt.name)
		if tt.code != 0 {
			assert.NotNil(t, resp.Results[i].ErrorMessage, tt.name)
		}
	}
	assert.Equal(t, 3, s.authz.Len(), "the valid ones, once each")
	assert.Equal(t, 3, s.image().ACLCount(), "in the metadata log")

	// DescribeAcls groups the bindings by resource pattern.
	d := kmsg.NewPtrDescribeACLsRequest()
	d.SetVersion(3)
	d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny,
		kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dr := c.RoundTrip(d).(*kmsg.DescribeACLsResponse)
	require.Zero(t, dr.ErrorCode)
	require.Len(t, dr.Resources, 2)
	assert.Equal(t, "orders", dr.Resources[0].ResourceName)
	assert.Equal(t, kmsg.ACLResourcePatternTypeLiteral, dr.Resources[0].ResourcePatternType)
	assert.Equal(t, "pay", dr.Resources[1].ResourceName)
	require.Len(t, dr.Resources[0].ACLs, 1)
	assert.Equal(t, "User:alice", dr.Resources[0].ACLs[0].Principal)

	d.Operation = kmsg.ACLOperationUnknown
	dr = c.RoundTrip(d).(*kmsg.DescribeACLsResponse)
	assert.Equal(t, kerr.InvalidRequest.Code, dr.ErrorCode, "an UNKNOWN filter")

	// DeleteAcls: each filter on its own.
	del := kmsg.NewPtrDeleteACLsRequest()
	del.SetVersion(3)
	byName, unknown := kmsg.NewDeleteACLsRequestFilter(), kmsg.NewDeleteACLsRequestFilter()
	byName.ResourceType, byName.ResourceName, byName.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.StringPtr("orders"), kmsg.ACLResourcePatternTypeMatch
	byName.Operation, byName.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	unknown.ResourceType, unknown.ResourcePatternType, unknown.Operation, unknown.PermissionType = kmsg.ACLResourceTypeUnknown,
		kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = []kmsg.DeleteACLsRequestFilter{byName, unknown}
	dresp := c.RoundTrip(del).(*kmsg.DeleteACLsResponse)
	require.Len(t, dresp.Results, 2)
	assert.Zero(t, dresp.Results[0].ErrorCode)
	require.Len(t, dresp.Results[0].MatchingACLs, 1, "MATCH on orders: the literal one (pay does not prefix it)")
	assert.Equal(t, "orders", dresp.Results[0].MatchingACLs[0].ResourceName)
	assert.Equal(t, kmsg.ACLOperationRead, dresp.Results[0].MatchingACLs[0].Operation)
	assert.Equal(t, kerr.InvalidRequest.Code, dresp.Results[1].ErrorCode)
	assert.Equal(t, 2, s.authz.Len())
}

// TestACLAPIsNeedTheCluster: CreateAcls and DeleteAcls need ALTER on the
// cluster, DescribeAcls DESCRIBE; allow.everyone.if.no.acl.found opens
// the cluster only while no binding applies to it.
func TestACLAPIsNeedTheCluster(t *testing.T) {
	t.Run("denied", func(t *testing.T) {
		c := dialRaw(t, newAuthzServer(t))
		d := kmsg.NewPtrDescribeACLsRequest()
		d.SetVersion(2)
		d.ResourceType, d.ResourcePatternType, d.Operation, d.PermissionType = 1, 1, 1, 1
		assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, c.RoundTrip(d).(*kmsg.DescribeACLsResponse).ErrorCode)
		cr := kmsg.NewPtrCreateACLsRequest()
		cr.SetVersion(2)
		cr.Creations = []kmsg.CreateACLsRequestCreation{creation(allow(kmsg.ACLResourceTypeTopic, "t", anonymous, kmsg.ACLOperationAll))}
		cresp := c.RoundTrip(cr).(*kmsg.CreateACLsResponse)
		require.Len(t, cresp.Results, 1)
		assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, cresp.Results[0].ErrorCode)
		del := kmsg.NewPtrDeleteACLsRequest()
		del.SetVersion(2)
		del.Filters = make([]kmsg.DeleteACLsRequestFilter, 2)
		dresp := c.RoundTrip(del).(*kmsg.DeleteACLsResponse)
		require.Len(t, dresp.Results, 2)
		assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, dresp.Results[1].ErrorCode)
	})
	t.Run("allow.everyone.if.no.acl.found", func(t *testing.T) {
		s := newAuthzServer(t, func(c *Config) { c.AllowEveryoneIfNoACL = true })
		c := dialRaw(t, s)
		cr := kmsg.NewPtrCreateACLsRequest()
		cr.SetVersion(1)
		cr.Creations = []kmsg.CreateACLsRequestCreation{creation(allow(kmsg.ACLResourceTypeCluster, acl.ClusterName, "User:admin", kmsg.ACLOperationAlter))}
		cresp := c.RoundTrip(cr).(*kmsg.CreateACLsResponse)
		require.Len(t, cresp.Results, 1)
		assert.Zero(t, cresp.Results[0].ErrorCode, "no binding applied to the cluster yet")
		cresp = c.RoundTrip(cr).(*kmsg.CreateACLsResponse)
		assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, cresp.Results[0].ErrorCode, "now one does, for User:admin alone")
	})
}

// TestGatesRefuseWholeRequests: a request its principal may not make at
// all is answered with Kafka's code wherever its response carries one,
// before any routing.
func TestGatesRefuseWholeRequests(t *testing.T) {
	s := newAuthzServer(t)
	createTopic(t, s, "orders", 2)
	c := dialRaw(t, s)

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, c.RoundTrip(join).(*kmsg.JoinGroupResponse).ErrorCode)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "g"
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, c.RoundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(8)
	commit.Group = "g"
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic, ct.Partitions = "orders", make([]kmsg.OffsetCommitRequestTopicPartition, 2)
	commit.Topics = append(commit.Topics, ct)
	cresp := c.RoundTrip(commit).(*kmsg.OffsetCommitResponse)
	require.Len(t, cresp.Topics, 1)
	require.Len(t, cresp.Topics[0].Partitions, 2)
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, cresp.Topics[0].Partitions[1].ErrorCode)

	idem := kmsg.NewPtrInitProducerIDRequest()
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, c.RoundTrip(idem).(*kmsg.InitProducerIDResponse).ErrorCode,
		"neither IDEMPOTENT_WRITE on the cluster nor WRITE on any topic")
	txnal := kmsg.NewPtrInitProducerIDRequest()
	txnal.TransactionalID = kmsg.StringPtr("tx")
	assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, c.RoundTrip(txnal).(*kmsg.InitProducerIDResponse).ErrorCode)

	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "orders", []int32{0, 1}
	m.Topics = append(m.Topics, mt)
	markers.Markers = append(markers.Markers, m)
	mresp := c.RoundTrip(markers).(*kmsg.WriteTxnMarkersResponse)
	require.Len(t, mresp.Markers, 1)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, mresp.Markers[0].Topics[0].Partitions[1].ErrorCode)

	hbReq := kmsg.NewPtrBrokerHeartbeatRequest()
	hbResp := c.RoundTrip(hbReq).(*kmsg.BrokerHeartbeatResponse)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, hbResp.ErrorCode)

	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.SetVersion(2)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, c.RoundTrip(ap).(*kmsg.AlterPartitionResponse).ErrorCode)

	scram := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, c.RoundTrip(scram).(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode)

	// IDEMPOTENT_WRITE is implied by WRITE on any topic (KIP-679).
	grant(t, s, allow(kmsg.ACLResourceTypeTopic, "orders", anonymous, kmsg.ACLOperationWrite))
	assert.Zero(t, c.RoundTrip(idem).(*kmsg.InitProducerIDResponse).ErrorCode)
}

// TestTopicChecks: the topics a client may not use are refused one by
// one, whether they exist or not, and hidden from a Metadata for all.
func TestTopicChecks(t *testing.T) {
	s := newAuthzServer(t)
	createTopic(t, s, "orders", 1)
	createTopic(t, s, "secret", 1)
	grant(t, s, allow(kmsg.ACLResourceTypeTopic, "orders", anonymous, kmsg.ACLOperationRead))
	c := dialRaw(t, s)

	all := kmsg.NewPtrMetadataRequest()
	all.SetVersion(12)
	meta := c.RoundTrip(all).(*kmsg.MetadataResponse)
	require.Len(t, meta.Topics, 1, "only what it may describe")
	assert.Equal(t, "orders", *meta.Topics[0].Topic)

	named := metadataRequest(12, "orders", "secret", "nowhere")
	named.AllowAutoTopicCreation = true
	meta = c.RoundTrip(named).(*kmsg.MetadataResponse)
	require.Len(t, meta.Topics, 3)
	assert.Zero(t, meta.Topics[0].ErrorCode)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, meta.Topics[1].ErrorCode)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, meta.Topics[2].ErrorCode, "whether it exists or not")
	_, err := s.image().Topic("nowhere")
	assert.Error(t, err, "not auto-created")

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(7)
	for _, name := range []string{"orders", "secret"} {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = name
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Timestamp = -1
		rt.Partitions = append(rt.Partitions, p)
		lo.Topics = append(lo.Topics, rt)
	}
	lresp := c.RoundTrip(lo).(*kmsg.ListOffsetsResponse)
	require.Len(t, lresp.Topics, 2)
	assert.Zero(t, lresp.Topics[0].Partitions[0].ErrorCode, "READ implies DESCRIBE")
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, lresp.Topics[1].Partitions[0].ErrorCode)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12) // by name
	fetch.MaxWaitMillis, fetch.MaxBytes = 10, 1<<20
	for _, name := range []string{"orders", "secret"} {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = name
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		fetch.Topics = append(fetch.Topics, ft)
	}
	fresp := c.RoundTrip(fetch).(*kmsg.FetchResponse)
	require.Len(t, fresp.Topics, 2)
	assert.Zero(t, fresp.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, fresp.Topics[1].Partitions[0].ErrorCode)

	fetch.ReplicaID = 2 // a follower's fetch, from a client without CLUSTER_ACTION
	fresp = c.RoundTrip(fetch).(*kmsg.FetchResponse)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, fresp.Topics[0].Partitions[0].ErrorCode, "even the topic it may read")
}

// TestAuthorizedOperations (KIP-430): without an authorizer every
// operation of the resource, as Kafka answers; with one, those allowed;
// -2147483648 when not asked for.
func TestAuthorizedOperations(t *testing.T) {
	topicOps := acl.Supported(kmsg.ACLResourceTypeTopic).Bitfield(kmsg.ACLResourceTypeTopic)
	clusterOps := acl.Supported(kmsg.ACLResourceTypeCluster).Bitfield(kmsg.ACLResourceTypeCluster)
	ask := func(v int16) *kmsg.MetadataRequest {
		req := metadataRequest(v, "orders")
		req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = true, true
		return req
	}

	s := newTestServer(t)
	createTopic(t, s, "orders", 1)
	c := dialRaw(t, s)
	for v := int16(8); v <= 13; v++ {
		meta := c.RoundTrip(ask(v)).(*kmsg.MetadataResponse)
		assert.Equal(t, topicOps, meta.Topics[0].AuthorizedOperations, "v%d", v)
		if v <= 10 {
			assert.Equal(t, clusterOps, meta.AuthorizedOperations, "v%d", v)
		} else {
			assert.Equal(t, int32(math.MinInt32), meta.AuthorizedOperations, "v%d: DescribeCluster's since v11", v)
		}
	}
	meta := c.RoundTrip(metadataRequest(10, "orders")).(*kmsg.MetadataResponse)
	assert.Equal(t, int32(math.MinInt32), meta.Topics[0].AuthorizedOperations, "not asked for")
	assert.Equal(t, int32(math.MinInt32), meta.AuthorizedOperations, "not asked for")

	s = newAuthzServer(t)
	createTopic(t, s, "orders", 1)
	grant(t, s, allow(kmsg.ACLResourceTypeTopic, "orders", anonymous, kmsg.ACLOperationRead))
	c = dialRaw(t, s)
	meta = c.RoundTrip(ask(10)).(*kmsg.MetadataResponse)
	assert.Equal(t, acl.Operations(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe).Bitfield(kmsg.ACLResourceTypeTopic),
		meta.Topics[0].AuthorizedOperations)
	assert.Zero(t, meta.AuthorizedOperations, "may not DESCRIBE the cluster: 0, as Kafka")
}

// TestACLsKeptInLogDir: a broker alone, whose metadata log is in memory,
// keeps its bindings in log.dirs and finds them again at start.
func TestACLsKeptInLogDir(t *testing.T) {
	dir := t.TempDir()
	cfg := durableTestConfig(dir)
	cfg.Authorizer = "acl"
	read := allow(kmsg.ACLResourceTypeTopic, "orders", "User:alice", kmsg.ACLOperationRead)
	write := allow(kmsg.ACLResourceTypeTopic, "orders", "User:bob", kmsg.ACLOperationWrite)

	s, err := New(cfg, nil)
	require.NoError(t, err)
	grant(t, s, read, write)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = s.ctrl().DeleteACLs(ctx, []acl.Filter{write.Filter()})
	require.NoError(t, err)
	require.NoError(t, s.Close(context.Background()))

	s, err = New(cfg, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close(context.Background())) }()
	assert.Equal(t, []acl.Binding{read}, s.image().ACLs(), "in the metadata image again")
	got, err := s.authz.Describe(acl.Any())
	require.NoError(t, err)
	assert.Equal(t, []acl.Binding{read}, got, "and in the authorizer")
}

// TestGroupChecks: READ on a group lets a client commit to it, DESCRIBE
// (implied by READ) describe and fetch it, DELETE delete it; a group it
// may not describe is refused by name and hidden from ListGroups; a topic
// it may not describe is refused in OffsetFetch.
func TestGroupChecks(t *testing.T) {
	s := newAuthzServer(t, func(c *Config) { c.GroupInitialRebalance = 0 })
	createTopic(t, s, "orders", 2)
	createTopic(t, s, "secret", 1)
	deny := allow(kmsg.ACLResourceTypeGroup, "theirs", anonymous, kmsg.ACLOperationDescribe)
	deny.Permission = kmsg.ACLPermissionTypeDeny
	grant(t, s, allow(kmsg.ACLResourceTypeGroup, acl.Wildcard, anonymous, kmsg.ACLOperationRead), deny,
		allow(kmsg.ACLResourceTypeTopic, "orders", anonymous, kmsg.ACLOperationRead))
	c := dialRaw(t, s)
	for _, g := range []string{"mine", "theirs"} {
		resp := c.RoundTrip(commitReq(8, g, "", -1, 5)).(*kmsg.OffsetCommitResponse)
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode, "READ on %s: a DENY of DESCRIBE leaves it", g)
	}

	d := kmsg.NewPtrDescribeGroupsRequest()
	d.SetVersion(5)
	d.Groups, d.IncludeAuthorizedOperations = []string{"mine", "theirs"}, true
	dresp := c.RoundTrip(d).(*kmsg.DescribeGroupsResponse)
	require.Len(t, dresp.Groups, 2)
	assert.Zero(t, dresp.Groups[0].ErrorCode)
	assert.Equal(t, acl.Operations(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe).Bitfield(kmsg.ACLResourceTypeGroup),
		dresp.Groups[0].AuthorizedOperations)
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, dresp.Groups[1].ErrorCode)

	l := kmsg.NewPtrListGroupsRequest()
	l.SetVersion(4)
	lresp := c.RoundTrip(l).(*kmsg.ListGroupsResponse)
	require.Len(t, lresp.Groups, 1, "theirs is hidden")
	assert.Equal(t, "mine", lresp.Groups[0].Group)

	f := kmsg.NewPtrOffsetFetchRequest()
	f.SetVersion(8)
	for _, g := range []string{"mine", "theirs"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		for _, topic := range []string{"orders", "secret"} {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = topic, []int32{0}
			rg.Topics = append(rg.Topics, rt)
		}
		f.Groups = append(f.Groups, rg)
	}
	fresp := c.RoundTrip(f).(*kmsg.OffsetFetchResponse)
	require.Len(t, fresp.Groups, 2)
	mine := fresp.Groups[0]
	require.Zero(t, mine.ErrorCode)
	require.Len(t, mine.Topics, 2)
	assert.Equal(t, int64(5), mine.Topics[0].Partitions[0].Offset)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, mine.Topics[1].Partitions[0].ErrorCode)
	assert.Equal(t, int64(-1), mine.Topics[1].Partitions[0].Offset)
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, fresp.Groups[1].ErrorCode)

	all := kmsg.NewPtrOffsetFetchRequest()
	all.SetVersion(7)
	all.Group = "mine" // null topics: every committed offset it may see
	aresp := c.RoundTrip(all).(*kmsg.OffsetFetchResponse)
	require.Zero(t, aresp.ErrorCode)
	require.Len(t, aresp.Topics, 1)
	assert.Equal(t, "orders", aresp.Topics[0].Topic)
	all.Group = "theirs"
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, c.RoundTrip(all).(*kmsg.OffsetFetchResponse).ErrorCode)

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.SetVersion(2)
	del.Groups = []string{"mine"}
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, c.RoundTrip(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode)
	grant(t, s, allow(kmsg.ACLResourceTypeGroup, "mine", anonymous, kmsg.ACLOperationDelete))
	assert.Zero(t, c.RoundTrip(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode)
}

// TestAdminChecks: creating, deleting and describing topics and their
// configs, and describing producers and transactions, each with Kafka's
// operation and code.
func TestAdminChecks(t *testing.T) {
	s := newAuthzServer(t)
	createTopic(t, s, "orders", 1)
	createTopic(t, s, "secret", 1)
	grant(t, s, allow(kmsg.ACLResourceTypeTopic, "new", anonymous, kmsg.ACLOperationCreate),
		allow(kmsg.ACLResourceTypeTopic, "orders", anonymous, kmsg.ACLOperationAlterConfigs),
		allow(kmsg.ACLResourceTypeTopic, "orders", anonymous, kmsg.ACLOperationRead))
	c := dialRaw(t, s)

	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	for _, name := range []string{"new", "other"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		create.Topics = append(create.Topics, rt)
	}
	cresp := c.RoundTrip(create).(*kmsg.CreateTopicsResponse)
	require.Len(t, cresp.Topics, 2)
	assert.Zero(t, cresp.Topics[0].ErrorCode, "CREATE on the topic")
	assert.Nil(t, cresp.Topics[0].Configs, "but no DESCRIBE_CONFIGS")
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, cresp.Topics[0].ConfigErrorCode)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, cresp.Topics[1].ErrorCode)

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.SetVersion(4)
	for _, r := range []struct {
		rt   kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "orders"}, {kmsg.ConfigResourceTypeTopic, "secret"}, {kmsg.ConfigResourceTypeBroker, "1"}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.rt, r.name
		dc.Resources = append(dc.Resources, rr)
	}
	dcresp := c.RoundTrip(dc).(*kmsg.DescribeConfigsResponse)
	require.Len(t, dcresp.Resources, 3)
	assert.Zero(t, dcresp.Resources[0].ErrorCode, "ALTER_CONFIGS implies DESCRIBE_CONFIGS")
	assert.NotEmpty(t, dcresp.Resources[0].Configs)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, dcresp.Resources[1].ErrorCode)
	assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, dcresp.Resources[2].ErrorCode)

	dp := kmsg.NewPtrDescribeProducersRequest()
	for _, name := range []string{"orders", "secret"} {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = name, []int32{0}
		dp.Topics = append(dp.Topics, rt)
	}
	dpresp := c.RoundTrip(dp).(*kmsg.DescribeProducersResponse)
	require.Len(t, dpresp.Topics, 2)
	assert.Zero(t, dpresp.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, dpresp.Topics[1].Partitions[0].ErrorCode)

	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"tx"}
	dtresp := c.RoundTrip(dt).(*kmsg.DescribeTransactionsResponse)
	require.Len(t, dtresp.TransactionStates, 1)
	assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, dtresp.TransactionStates[0].ErrorCode)

	deleteTopics := kmsg.NewPtrDeleteTopicsRequest()
	deleteTopics.SetVersion(6)
	for _, name := range []string{"secret", "nowhere"} {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		deleteTopics.Topics = append(deleteTopics.Topics, rt)
	}
	dtopics := c.RoundTrip(deleteTopics).(*kmsg.DeleteTopicsResponse)
	require.Len(t, dtopics.Topics, 2)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, dtopics.Topics[0].ErrorCode)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, dtopics.Topics[1].ErrorCode, "whether it exists or not")
	_, err := s.image().Topic("secret")
	assert.NoError(t, err, "still there")
}

// TestScramCredentialsKeptInLogDir: a broker alone keeps the SCRAM
// credentials AlterUserScramCredentials made, with its bindings, in
// log.dirs, and authenticates with them again after a restart; a
// credential deleted stays deleted.
func TestScramCredentialsKeptInLogDir(t *testing.T) {
	dir := t.TempDir()
	cfg := durableTestConfig(dir)
	alice, err := sasl.NewCredential(sasl.ScramSHA512, "alice-secret", 0)
	require.NoError(t, err)
	bob, err := sasl.NewCredential(sasl.ScramSHA256, "bob-secret", 0)
	require.NoError(t, err)

	s, err := New(cfg, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = s.ctrl().AlterScram(ctx, []metadata.ScramChange{{User: "alice", Mechanism: sasl.ScramSHA512, Credential: &alice},
		{User: "bob", Mechanism: sasl.ScramSHA256, Credential: &bob}})
	require.NoError(t, err)
	_, err = s.ctrl().AlterScram(ctx, []metadata.ScramChange{{User: "bob", Mechanism: sasl.ScramSHA256}})
	require.NoError(t, err)
	require.NoError(t, s.Close(context.Background()))

	s, err = New(cfg, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close(context.Background())) }()
	got, ok := s.image().Credential("alice", sasl.ScramSHA512)
	require.True(t, ok, "alice's credential is in the metadata image again")
	assert.Equal(t, alice, got)
	_, ok = s.image().Credential("bob", sasl.ScramSHA256)
	assert.False(t, ok, "bob's, deleted, is not")
}
