package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

// TestEveryAPIIsChecked: with authorization on, a client's request is
// checked before it is served or forwarded; an API the proxy would serve
// without a check would be refused, so every API it serves has one, but
// those it answers itself before authentication (ApiVersions, SASL).
func TestEveryAPIIsChecked(t *testing.T) {
	for _, a := range apis.APIs() {
		if a.Handler.local {
			continue
		}
		assert.NotNil(t, a.Handler.check, "%s has no authorization check", kmsg.NameForKey(int16(a.Key)))
	}
}

// readsA is User:alice allowed READ (and so DESCRIBE) on topic a alone.
func readsA(t *testing.T) authz.Access {
	t.Helper()
	a, err := acl.New()
	require.NoError(t, err)
	_, err = a.Add(acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "a", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:alice", Host: acl.Wildcard, Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow})
	require.NoError(t, err)
	return authz.ForPrincipal(a, "User:alice", "127.0.0.1")
}

// TestFetchCheck: a denied topic is taken out of the fetch before it is
// built (it is never read, from upstream or a cache), and answered
// TOPIC_AUTHORIZATION_FAILED, with no records, beside the allowed one.
func TestFetchCheck(t *testing.T) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	for _, name := range []string{"a", "b"} {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = name
		rt.Partitions = []kmsg.FetchRequestTopicPartition{{Partition: 0}, {Partition: 1}}
		req.Topics = append(req.Topics, rt)
	}
	fwd, amend := authorizeFetch(nil, readsA(t), req)
	require.NotNil(t, fwd)
	f := fwd.(*kmsg.FetchRequest)
	require.Len(t, f.Topics, 1, "b is not fetched")
	assert.Equal(t, "a", f.Topics[0].Topic)
	require.Len(t, req.Topics, 2, "the client's request is left as it was")

	resp := f.ResponseKind().(*kmsg.FetchResponse)
	require.NotNil(t, amend)
	amend(resp)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, "b", resp.Topics[0].Topic)
	require.Len(t, resp.Topics[0].Partitions, 2)
	for _, p := range resp.Topics[0].Partitions {
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, p.ErrorCode)
		assert.Empty(t, p.RecordBatches)
	}

	only := kmsg.NewPtrFetchRequest()
	only.SetVersion(12)
	only.Topics = req.Topics[1:]
	fwd, amend = authorizeFetch(nil, readsA(t), only)
	assert.Nil(t, fwd, "nothing left to fetch: answered by the proxy at once")
	assert.NotNil(t, amend)

	fwd, amend = authorizeFetch(nil, authz.Access{}, req)
	assert.Same(t, req, fwd, "no authorizer: the request as it is")
	assert.Nil(t, amend)
}

// TestMetadataCheck: a Metadata for all topics hides those the client
// may not describe; one naming them answers TOPIC_AUTHORIZATION_FAILED
// and does not forward them.
func TestMetadataCheck(t *testing.T) {
	answer := func() *kmsg.MetadataResponse {
		m := kmsg.NewPtrMetadataResponse()
		m.SetVersion(12)
		for _, name := range []string{"a", "b"} {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = kmsg.StringPtr(name)
			m.Topics = append(m.Topics, mt)
		}
		return m
	}
	all := kmsg.NewPtrMetadataRequest()
	all.SetVersion(12)
	fwd, amend := authorizeMetadata(nil, readsA(t), all)
	assert.Same(t, all, fwd)
	m := answer()
	amend(m)
	require.Len(t, m.Topics, 1)
	assert.Equal(t, "a", *m.Topics[0].Topic, "b is hidden")

	named := kmsg.NewPtrMetadataRequest()
	named.SetVersion(12)
	named.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("b")}}
	fwd, amend = authorizeMetadata(nil, readsA(t), named)
	require.NotNil(t, fwd)
	assert.Empty(t, fwd.(*kmsg.MetadataRequest).Topics, "b is not asked upstream")
	assert.NotNil(t, fwd.(*kmsg.MetadataRequest).Topics, "nor all topics")
	m = answer()
	m.Topics = nil
	amend(m)
	require.Len(t, m.Topics, 1)
	assert.Equal(t, "b", *m.Topics[0].Topic)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, m.Topics[0].ErrorCode)
}

// TestACLFollowerFailsClosed: until the upstream's bindings are loaded,
// and whenever upstream refuses them, every client but a super user is
// denied, and the proxy says why; a transport failure keeps the
// bindings last loaded.
func TestACLFollowerFailsClosed(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	opts, on, err := authz.Options(authz.StandardAuthorizer, "User:admin", true)
	require.NoError(t, err)
	require.True(t, on)
	f, err := newACLFollower(opts, zap.New(core))
	require.NoError(t, err)
	reads := func(principal, topic string) bool {
		return authz.ForPrincipal(f.authorizer(), principal, "127.0.0.1").Sees(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, topic)
	}
	assert.False(t, reads("User:alice", "a"), "not loaded: denied, allow.everyone.if.no.acl.found or not")
	assert.True(t, reads("User:admin", "a"), "a super user, as Kafka's StandardAuthorizer before its load")

	refused := func(code int16) *kmsg.DescribeACLsResponse {
		r := kmsg.NewPtrDescribeACLsResponse()
		r.ErrorCode = code
		return r
	}
	for _, code := range []int16{kerr.SecurityDisabled.Code, kerr.ClusterAuthorizationFailed.Code} {
		assert.False(t, f.apply(refused(code), nil))
		assert.False(t, reads("User:alice", "a"), "%s: still closed", kerr.ErrorForCode(code))
	}
	assert.False(t, f.apply(refused(kerr.ClusterAuthorizationFailed.Code), nil))
	assert.Equal(t, 2, logs.FilterMessageSnippet("fails closed").Len(), "each new reason logged, once")
	assert.Contains(t, logs.All()[0].ContextMap()["reason"], "SECURITY_DISABLED")

	loaded := kmsg.NewPtrDescribeACLsResponse()
	res := kmsg.NewDescribeACLsResponseResource()
	res.ResourceType, res.ResourceName, res.ResourcePatternType = kmsg.ACLResourceTypeTopic, "a", kmsg.ACLResourcePatternTypeLiteral
	res.ACLs = []kmsg.DescribeACLsResponseResourceACL{{Principal: "User:alice", Host: "*",
		Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}
	loaded.Resources = append(loaded.Resources, res)
	require.True(t, f.apply(loaded, nil))
	assert.True(t, reads("User:alice", "a"), "loaded: alice's binding")
	assert.False(t, reads("User:bob", "a"), "a binding applies to a: not everyone")
	assert.True(t, reads("User:bob", "c"), "no binding applies to c: allow.everyone.if.no.acl.found")

	assert.True(t, f.apply(nil, errConnClosed), "a transport failure keeps the bindings")
	assert.True(t, reads("User:alice", "a"))
	assert.False(t, f.apply(refused(kerr.ClusterAuthorizationFailed.Code), nil))
	assert.False(t, reads("User:alice", "a"), "refused again: closed again")
	assert.False(t, reads("User:bob", "c"), "closed: no allow.everyone.if.no.acl.found")
}
