package test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// aclUsers have SCRAM-SHA-512 credentials on an ACL broker, each with the
// password "<name>-secret"; admin is a super user.
var aclUsers = []string{"admin", "alice", "bob"}

// aclConfig is a secure broker (a PLAINTEXT listener, whose clients are
// User:ANONYMOUS, and a SASL_SSL one, as startSecureBroker's) with
// Kafka's StandardAuthorizer on, User:admin its super user, and no
// binding: nobody else may do anything.
func aclConfig(certs testCerts) server.Config {
	cfg := server.Default()
	cfg.Listener = "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0"
	cfg.ProtocolMap = "SECURE:SASL_SSL"
	cfg.Keystore, cfg.Truststore = certs.broker, certs.ca
	var creds []string
	for _, u := range aclUsers {
		creds = append(creds, fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s-secret]", u, u))
	}
	cfg.AddScram = strings.Join(creds, ";")
	cfg.Authorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	cfg.SuperUsers = "User:admin"
	cfg.GroupInitialRebalance = 50 * time.Millisecond
	return cfg
}

// userClient returns a client of srv's SASL_SSL listener authenticated
// as user, once user's credentials (made at start) authenticate.
func userClient(t *testing.T, certs testCerts, srv *server.Server, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl := secureClient(t, certs, listenerAddr(t, srv, "SECURE"),
		append([]kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism())}, opts...)...)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return cl.Ping(ctx) == nil
	}, 15*time.Second, 20*time.Millisecond, "%s authenticates", user)
	return cl
}

// testCtx is a context for one test's requests.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// metadataOf asks from for topics (none: every topic).
func metadataOf(t *testing.T, from kmsg.Requestor, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testCtx(t), from)
	require.NoError(t, err)
	return resp
}

// topicNames lists the topics of a Metadata answer that carry no error.
func topicNames(resp *kmsg.MetadataResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		if t.ErrorCode == 0 {
			out = append(out, *t.Topic)
		}
	}
	return out
}

// fetchCode fetches partition 0 of topic (named and by id, whichever the
// version sends) from offset 0 through from, as replica replicaID (-1: a
// consumer), and returns the partition's error code.
func fetchCode(t *testing.T, from kmsg.Requestor, topic string, id [16]byte, replicaID int32) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.ReplicaState.ID = replicaID, replicaID
	req.MaxWaitMillis, req.MaxBytes = 10, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), from)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// produceErr produces one record to topic through a client made with
// opts, and returns its error.
func produceErr(t *testing.T, cl *kgo.Client, topic string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// setUpTopics creates topics as admin, with three records each.
func setUpTopics(t *testing.T, admin *kgo.Client, topics ...string) {
	t.Helper()
	adm := kadm.NewClient(admin)
	for _, name := range topics {
		_, err := adm.CreateTopic(testCtx(t), 1, 1, nil, name)
		require.NoError(t, err)
		for i := range 3 {
			require.NoError(t, admin.ProduceSync(testCtx(t), &kgo.Record{Topic: name, Value: []byte(fmt.Sprint(i))}).FirstErr())
		}
	}
}

// createACLs creates the bindings b builds, as admin, and requires each
// to succeed.
func createACLs(t *testing.T, admin *kgo.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := kadm.NewClient(admin).CreateACLs(testCtx(t), b)
	require.NoError(t, err)
	require.NotEmpty(t, res)
	for _, r := range res {
		require.NoError(t, r.Err, "%s %s on %s %s", r.Permission, r.Operation, r.Type, r.Name)
	}
}

// TestUnauthorizedClientsGetKafkasErrors: with an authorizer and no
// binding, neither an unauthenticated client (PLAINTEXT, User:ANONYMOUS)
// nor an authenticated one may produce, fetch, describe, list or join
// anything, and each request gets Kafka's error code where Kafka puts it;
// the super user may do all of it.
func TestUnauthorizedClientsGetKafkasErrors(t *testing.T) {
	certs := makeCerts(t)
	srv := startACLBroker(t, certs)
	admin := userClient(t, certs, srv, "admin")
	setUpTopics(t, admin, "orders")
	id := topicID(t, admin, "orders")
	adm := kadm.NewClient(admin)
	_, err := adm.CommitOffsets(testCtx(t), "readers", kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Offset: 0}))
	require.NoError(t, err)

	for _, who := range []struct {
		name string
		cl   *kgo.Client
	}{
		{"anonymous", newClient(t, srv, kgo.DisableIdempotentWrite())},
		{"alice", userClient(t, certs, srv, "alice", kgo.DisableIdempotentWrite())},
	} {
		t.Run(who.name, func(t *testing.T) {
			cl := who.cl
			ctx := testCtx(t)
			assert.Empty(t, metadataOf(t, cl).Topics, "every topic hidden")
			named := metadataOf(t, cl, "orders", "nowhere")
			require.Len(t, named.Topics, 2)
			for _, mt := range named.Topics {
				assert.Equal(t, kerr.TopicAuthorizationFailed.Code, mt.ErrorCode, "%s, whether it exists or not", *mt.Topic)
			}

			assert.ErrorIs(t, produceErr(t, cl, "orders"), kerr.TopicAuthorizationFailed)
			assert.Equal(t, kerr.TopicAuthorizationFailed.Code, fetchCode(t, cl, "orders", id, -1))

			lo := kmsg.NewPtrListOffsetsRequest()
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = "orders"
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Timestamp = -1
			lt.Partitions = append(lt.Partitions, lp)
			lo.Topics = append(lo.Topics, lt)
			loResp, err := lo.RequestWith(ctx, srvBroker(t, cl)) // kgo would shard it by its metadata, which refuses the topic
			require.NoError(t, err)
			assert.Equal(t, kerr.TopicAuthorizationFailed.Code, loResp.Topics[0].Partitions[0].ErrorCode)

			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKey, fc.CoordinatorKeys = "readers", []string{"readers"}
			fcResp, err := fc.RequestWith(ctx, srvBroker(t, cl))
			require.NoError(t, err)
			code := fcResp.ErrorCode
			if len(fcResp.Coordinators) > 0 {
				code = fcResp.Coordinators[0].ErrorCode
			}
			assert.Equal(t, kerr.GroupAuthorizationFailed.Code, code)

			join := kmsg.NewPtrJoinGroupRequest()
			join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "readers", "consumer", 10000, 10000
			join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
			joinResp, err := join.RequestWith(ctx, srvBroker(t, cl))
			require.NoError(t, err)
			assert.Equal(t, kerr.GroupAuthorizationFailed.Code, joinResp.ErrorCode)

			groups, err := kadm.NewClient(cl).ListGroups(ctx)
			require.NoError(t, err)
			assert.Empty(t, groups.Groups(), "groups it may not describe are hidden")
			_, err = kadm.NewClient(cl).DescribeGroups(ctx, "readers")
			assert.ErrorIs(t, err, kerr.GroupAuthorizationFailed)

			_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "new")
			assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
			acls, err := kadm.NewClient(cl).DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
				Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny))
			require.NoError(t, err)
			require.NotEmpty(t, acls)
			assert.ErrorIs(t, acls[0].Err, kerr.ClusterAuthorizationFailed)

			idem := kmsg.NewPtrInitProducerIDRequest()
			idResp, err := idem.RequestWith(ctx, cl)
			require.NoError(t, err)
			assert.Equal(t, kerr.ClusterAuthorizationFailed.Code, idResp.ErrorCode, "an idempotent producer needs WRITE on some topic")
		})
	}

	// The super user may do all of it.
	assert.Contains(t, topicNames(metadataOf(t, admin)), "orders")
	assert.Zero(t, fetchCode(t, admin, "orders", id, -1))
	groups, err := adm.ListGroups(testCtx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"readers"}, groups.Groups())
}

// srvBroker returns the one broker cl knows, to send it a request that kgo
// would otherwise route by group (a JoinGroup goes to its coordinator,
// which FindCoordinator would refuse to name).
func srvBroker(t *testing.T, cl *kgo.Client) *kgo.Broker {
	t.Helper()
	meta := metadataOf(t, cl)
	require.NotEmpty(t, meta.Brokers)
	return cl.Broker(int(meta.Brokers[0].NodeID))
}

// TestReadOneTopic: a client allowed READ on one topic and its group sees
// that topic alone in Metadata, consumes it in its group, and may neither
// read another nor write the one it reads.
func TestReadOneTopic(t *testing.T) {
	certs := makeCerts(t)
	srv := startACLBroker(t, certs)
	admin := userClient(t, certs, srv, "admin")
	setUpTopics(t, admin, "orders", "payments")
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Topics("orders").Groups("readers").Operations(kadm.OpRead).
		ResourcePatternType(kadm.ACLPatternLiteral))

	alice := userClient(t, certs, srv, "alice", kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("readers"),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.DisableIdempotentWrite())
	assert.Equal(t, []string{"orders"}, topicNames(metadataOf(t, alice)), "READ implies DESCRIBE; payments is hidden")

	var got []string
	ctx := testCtx(t)
	for len(got) < 3 {
		fs := alice.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Topic+"/"+string(r.Value)) })
	}
	assert.Equal(t, []string{"orders/0", "orders/1", "orders/2"}, got)
	require.NoError(t, alice.CommitUncommittedOffsets(ctx))
	offsets, err := kadm.NewClient(admin).FetchOffsets(ctx, "readers")
	require.NoError(t, err)
	o, ok := offsets.Lookup("orders", 0)
	require.True(t, ok)
	assert.Equal(t, int64(3), o.At, "committed in its group")

	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, fetchCode(t, alice, "payments", topicID(t, admin, "payments"), -1))
	assert.ErrorIs(t, produceErr(t, alice, "orders"), kerr.TopicAuthorizationFailed, "READ is no WRITE")
}

// TestDenyWinsAndPrefixes: a PREFIXED ALLOW for everyone opens every topic
// it begins, a LITERAL DENY closes one of them to one principal whatever
// allows it, and nothing closes anything to a super user.
func TestDenyWinsAndPrefixes(t *testing.T) {
	certs := makeCerts(t)
	srv := startACLBroker(t, certs)
	admin := userClient(t, certs, srv, "admin")
	setUpTopics(t, admin, "payments", "payroll", "orders")
	createACLs(t, admin, kadm.NewACLs().Allow("User:*").Topics("pay").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpRead))
	createACLs(t, admin, kadm.NewACLs().Deny("User:alice").Topics("payroll").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	createACLs(t, admin, kadm.NewACLs().Deny("User:*").Topics("orders").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral))

	alice := userClient(t, certs, srv, "alice")
	bob := userClient(t, certs, srv, "bob")
	ids := map[string][16]byte{}
	for _, name := range []string{"payments", "payroll", "orders"} {
		ids[name] = topicID(t, admin, name)
	}
	code := func(cl *kgo.Client, topic string) int16 { return fetchCode(t, cl, topic, ids[topic], -1) }
	assert.Zero(t, code(alice, "payments"), "the prefix allows")
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, code(alice, "payroll"), "DENY wins")
	assert.Zero(t, code(bob, "payroll"), "the DENY is alice's")
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, code(bob, "orders"), "the prefix does not cover it")
	assert.Zero(t, code(admin, "orders"), "a super user, whatever denies")
	assert.Equal(t, []string{"payments", "payroll"}, topicNames(metadataOf(t, bob)), "orders is denied to all")
	assert.Equal(t, []string{"payments", "payroll"}, topicNames(metadataOf(t, alice)),
		"a DENY of READ denies READ alone: the prefix's READ still implies DESCRIBE, as in Kafka")
}

// TestACLsAdminRoundTrip: kadm creates, describes and deletes ACLs, with
// Kafka's per-entry errors, and what it deletes stops allowing.
func TestACLsAdminRoundTrip(t *testing.T) {
	certs := makeCerts(t)
	srv := startACLBroker(t, certs)
	admin := userClient(t, certs, srv, "admin")
	setUpTopics(t, admin, "orders")
	adm := kadm.NewClient(admin)
	ctx := testCtx(t)

	createACLs(t, admin, kadm.NewACLs().Allow("User:alice", "User:bob").Topics("orders").Operations(kadm.OpRead, kadm.OpWrite).
		ResourcePatternType(kadm.ACLPatternLiteral))
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").AllowHosts("127.0.0.1").Groups("g").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead))
	bad, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("localhost").Topics("orders").Operations(kadm.OpRead).
		ResourcePatternType(kadm.ACLPatternLiteral))
	require.NoError(t, err)
	require.Len(t, bad, 1)
	assert.ErrorIs(t, bad[0].Err, kerr.InvalidRequest, "a host is an IP address")

	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny))
	require.NoError(t, err)
	var all []string
	for _, d := range described {
		require.NoError(t, d.Err)
		for _, a := range d.Described {
			all = append(all, fmt.Sprintf("%s %s %s %s %s %s", a.Type, a.Name, a.Pattern, a.Principal, a.Host, a.Operation))
		}
	}
	assert.ElementsMatch(t, []string{
		"TOPIC orders LITERAL User:alice * READ", "TOPIC orders LITERAL User:alice * WRITE",
		"TOPIC orders LITERAL User:bob * READ", "TOPIC orders LITERAL User:bob * WRITE",
		"GROUP g PREFIXED User:alice 127.0.0.1 READ",
	}, all)

	bob := userClient(t, certs, srv, "bob")
	id := topicID(t, admin, "orders")
	require.Zero(t, fetchCode(t, bob, "orders", id, -1))
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().Topics("orders").Operations(kadm.OpAny).
		ResourcePatternType(kadm.ACLPatternLiteral))
	require.NoError(t, err)
	var gone int
	for _, d := range deleted {
		require.NoError(t, d.Err)
		gone += len(d.Deleted)
	}
	assert.Equal(t, 2, gone, "bob's READ and WRITE")
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, fetchCode(t, bob, "orders", id, -1), "deleted: no more allowed")
	assert.Zero(t, fetchCode(t, userClient(t, certs, srv, "alice"), "orders", id, -1), "alice's stay")
}

// TestACLsSurviveRestart: a broker alone with log.dirs keeps its bindings
// across a restart.
func TestACLsSurviveRestart(t *testing.T) {
	certs := makeCerts(t)
	cfg := aclConfig(certs)
	cfg.LogDirs = t.TempDir()
	srv, stop := runBroker(t, cfg)
	admin := userClient(t, certs, srv, "admin")
	setUpTopics(t, admin, "orders")
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	stop()

	srv, _ = runBroker(t, cfg)
	admin = userClient(t, certs, srv, "admin")
	id := topicID(t, admin, "orders")
	assert.Zero(t, fetchCode(t, userClient(t, certs, srv, "alice"), "orders", id, -1), "alice's binding is back")
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, fetchCode(t, userClient(t, certs, srv, "bob"), "orders", id, -1))
}

// TestSpoofedReplicaFetchIsRefused: a client that may read a topic, but
// lacks CLUSTER_ACTION on the cluster, cannot fetch it as a replica (a
// replica id of a broker's): TOPIC_AUTHORIZATION_FAILED, as Kafka answers,
// in both the replica_id (before v15) and the replica_state forms.
func TestSpoofedReplicaFetchIsRefused(t *testing.T) {
	certs := makeCerts(t)
	srv := startACLBroker(t, certs)
	admin := userClient(t, certs, srv, "admin")
	setUpTopics(t, admin, "orders")
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	id := topicID(t, admin, "orders")

	old := kversion.Stable()
	old.SetMaxKeyVersion(kmsg.Fetch.Int16(), 14) // replica_id, before replica_state
	for _, cl := range []*kgo.Client{userClient(t, certs, srv, "alice"), userClient(t, certs, srv, "alice", kgo.MaxVersions(old))} {
		assert.Zero(t, fetchCode(t, cl, "orders", id, -1), "as a consumer")
		for _, replica := range []int32{1, 2} {
			assert.Equal(t, kerr.TopicAuthorizationFailed.Code, fetchCode(t, cl, "orders", id, replica), "posing as broker %d", replica)
		}
	}
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpClusterAction).ResourcePatternType(kadm.ACLPatternLiteral))
	assert.NotEqual(t, kerr.TopicAuthorizationFailed.Code, fetchCode(t, userClient(t, certs, srv, "alice"), "orders", id, 2),
		"with CLUSTER_ACTION, the replica check is the partition's")
}

// TestACLsReachEveryBroker: in a cluster, bindings made through any broker
// (a broker that is not the controller forwards CreateAcls and DeleteAcls
// to it) reach every broker's authorizer, and survive the whole cluster's
// restart, its metadata log being durable in log.dirs.
func TestACLsReachEveryBroker(t *testing.T) {
	base := t.TempDir()
	c := startCluster(t, 3, func(cfg *server.Config) {
		cfg.Authorizer = "acl"
		cfg.SuperUsers = "User:ANONYMOUS" // the brokers' principal between them, over PLAINTEXT
		cfg.LogDirs = filepath.Join(base, fmt.Sprint(cfg.NodeID))
	})
	cl := c.client()
	ctx := testCtx(t)
	describeAt := func(id int32) ([]string, error) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				out = append(out, fmt.Sprintf("%s %s %s %s", r.ResourceName, a.Principal, a.Operation, a.PermissionType))
			}
		}
		return out, kerr.ErrorForCode(resp.ErrorCode)
	}
	everywhere := func(want []string, msg string) {
		t.Helper()
		for id := int32(1); id <= 3; id++ {
			require.Eventually(t, func() bool {
				got, err := describeAt(id)
				return err == nil && assert.ObjectsAreEqual(want, got)
			}, 20*time.Second, 20*time.Millisecond, "broker %d: %s", id, msg)
		}
	}

	// Each broker in turn takes a creation: two of them forward it.
	for id := int32(1); id <= 3; id++ {
		req := kmsg.NewPtrCreateACLsRequest()
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, fmt.Sprintf("t%d", id), kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, cr)
		require.Eventually(t, func() bool {
			resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
			return err == nil && len(resp.Results) == 1 && resp.Results[0].ErrorCode == 0
		}, 20*time.Second, 50*time.Millisecond, "created through broker %d", id)
	}
	want := []string{"t1 User:alice READ ALLOW", "t2 User:alice READ ALLOW", "t3 User:alice READ ALLOW"}
	everywhere(want, "every binding")

	for id := int32(1); id <= 3; id++ {
		c.stop(id)
	}
	for id := int32(1); id <= 3; id++ {
		c.start(id)
	}
	cl = c.client()
	everywhere(want, "after the whole cluster's restart")

	deleted, err := kadm.NewClient(cl).DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t2").Operations(kadm.OpAny).
		ResourcePatternType(kadm.ACLPatternMatch))
	require.NoError(t, err)
	require.NoError(t, deleted[0].Err)
	require.Len(t, deleted[0].Deleted, 1)
	everywhere([]string{"t1 User:alice READ ALLOW", "t3 User:alice READ ALLOW"}, "t2's binding deleted")
}

// startACLBroker starts aclConfig's broker until the test ends.
func startACLBroker(t *testing.T, certs testCerts) *server.Server {
	t.Helper()
	srv, _ := runBroker(t, aclConfig(certs))
	return srv
}

// TestTransactionsNeedTheirID: a transactional producer needs WRITE on its
// transactional id and on its topics: with them its transaction commits
// (its InitProducerId, AddPartitionsToTxn, transactional batches and
// EndTxn all checked); without the id, InitProducerId is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func TestTransactionsNeedTheirID(t *testing.T) {
	certs := makeCerts(t)
	srv := startACLBroker(t, certs)
	admin := userClient(t, certs, srv, "admin")
	setUpTopics(t, admin, "orders")
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").TransactionalIDs("tx").Topics("orders").Operations(kadm.OpWrite).
		ResourcePatternType(kadm.ACLPatternLiteral))

	alice := userClient(t, certs, srv, "alice", kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("orders"))
	ctx := testCtx(t)
	require.NoError(t, alice.BeginTransaction())
	require.NoError(t, alice.ProduceSync(ctx, kgo.StringRecord("in a transaction")).FirstErr())
	require.NoError(t, alice.EndTransaction(ctx, kgo.TryCommit))
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, "orders")
	require.NoError(t, err)
	end, _ := ends.Lookup("orders", 0)
	assert.Equal(t, int64(5), end.Offset, "three records, one of the transaction and its marker")

	for _, who := range []struct{ user, id string }{{"bob", "tx"}, {"alice", "other"}} {
		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(who.id), 10000
		cl := userClient(t, certs, srv, who.user)
		resp, err := init.RequestWith(ctx, srvBroker(t, cl))
		require.NoError(t, err)
		assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, resp.ErrorCode, "%s with %s", who.user, who.id)
	}
}
