package test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	proxy "github.com/gopurgatory/purgatory/examples/proxy/server"
)

// startACLProxy runs a proxy that authorizes each of its clients (alice,
// bob: SASL_SSL users of its own, password "<name>-secret") with the
// ACL bindings of upstream, a broker's SASL_SSL listener where it
// authenticates as the user proxy; it reads them every 100ms.
func startACLProxy(t *testing.T, certs testCerts, upstream string) *proxy.Server {
	t.Helper()
	usersFile := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(usersFile, []byte("alice=alice-secret\nbob=bob-secret\n"), 0o600))
	return startProxy(t, upstream, func(c *proxy.Config) {
		c.Listener = "SASL_SSL://127.0.0.1:0"
		c.Keystore, c.UsersFile = certs.broker, usersFile
		c.UpstreamProtocol, c.UpstreamMechanism = "SASL_SSL", "SCRAM-SHA-512"
		c.UpstreamUser, c.UpstreamPassword, c.UpstreamTruststore = "proxy", "proxy-secret", certs.ca
		c.Authorizer, c.ACLRefresh = "org.apache.kafka.metadata.authorizer.StandardAuthorizer", 100*time.Millisecond
	})
}

// proxyUser is a client of p authenticated as user.
func proxyUser(t *testing.T, certs testCerts, p *proxy.Server, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return secureClient(t, certs, p.Addr().String(), append([]kgo.Opt{
		kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism()), kgo.DisableIdempotentWrite(),
	}, opts...)...)
}

// fetchAtOffset fetches partition 0 of topic (id: its id) at offset
// through from, and returns its answer.
func fetchAtOffset(t *testing.T, from kmsg.Requestor, topic string, id [16]byte, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := fetchAt(12, topic, id, 0, offset, 50*time.Millisecond, 1)
	resp, err := req.RequestWith(testCtx(t), from)
	require.NoError(t, err)
	return onlyPartition(t, resp)
}

// TestProxyClientAcls: the proxy checks each client's requests against
// its own principal with the upstream's bindings, its shared long poll
// included. Before the proxy may read the bindings (its principal lacks
// DESCRIBE on the cluster) every client is denied; once it may, alice,
// allowed READ on topic a alone, reads a, gets TOPIC_AUTHORIZATION_FAILED
// for b even at the offsets another client's long poll on b filled the
// shared cache with, sees a alone in Metadata, and may not produce.
func TestProxyClientAcls(t *testing.T) {
	certs := makeCerts(t)
	cfg := aclConfig(certs)
	cfg.AddScram += ";SCRAM-SHA-512=[name=proxy,password=proxy-secret]"
	srv, _ := runBroker(t, cfg)
	admin := userClient(t, certs, srv, "admin")
	setUpTopics(t, admin, "a", "b")
	ids := map[string][16]byte{"a": topicID(t, admin, "a"), "b": topicID(t, admin, "b")}
	// The proxy may use every topic and group upstream, but not read the
	// bindings yet.
	createACLs(t, admin, kadm.NewACLs().Allow("User:proxy").Topics("*").Groups("*").Operations(kadm.OpAll).
		ResourcePatternType(kadm.ACLPatternLiteral))
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Topics("a").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	createACLs(t, admin, kadm.NewACLs().Allow("User:bob").Topics("a", "b").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))

	p := startACLProxy(t, certs, listenerAddr(t, srv, "SECURE"))
	alice := proxyUser(t, certs, p, "alice")
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return alice.Ping(ctx) == nil
	}, 15*time.Second, 20*time.Millisecond, "alice reaches the proxy")

	// Fail closed: upstream answers the proxy's DescribeAcls
	// CLUSTER_AUTHORIZATION_FAILED.
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, fetchAtOffset(t, alice, "a", ids["a"], 0).ErrorCode, "denied before the bindings are loaded")
	assert.Empty(t, topicNames(metadataOf(t, alice)), "every topic hidden before the bindings are loaded")

	createACLs(t, admin, kadm.NewACLs().Allow("User:proxy").Clusters().Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	require.Eventually(t, func() bool { return fetchAtOffset(t, alice, "a", ids["a"], 0).ErrorCode == 0 },
		15*time.Second, 20*time.Millisecond, "the bindings loaded, alice reads a")
	got := fetchAtOffset(t, alice, "a", ids["a"], 0)
	assert.NotEmpty(t, got.RecordBatches, "a's records")

	// bob waits at the end of b: the proxy tails b, and the records
	// produced next reach bob from the shared cache.
	bob := proxyUser(t, certs, p, "bob", kgo.ConsumeTopics("b"), kgo.FetchMaxWait(time.Second))
	tp := newTape()
	consume(t, bob, tp, false)
	require.Eventually(t, func() bool { return tp.len() == 3 }, 15*time.Second, 20*time.Millisecond, "bob reads b's first records")
	require.Eventually(t, func() bool { return p.Stats().Tailed > 0 }, 15*time.Second, 20*time.Millisecond, "b is tailed")
	for range 3 {
		require.NoError(t, admin.ProduceSync(testCtx(t), &kgo.Record{Topic: "b", Value: []byte("new")}).FirstErr())
	}
	require.Eventually(t, func() bool { return tp.len() == 6 }, 15*time.Second, 20*time.Millisecond, "bob reads the new records")
	require.Positive(t, metric(t, p.Registry(), "proxy_fetch_partitions_total", "source", "cache"), "some answered from the cache")

	for _, offset := range []int64{0, 3, 6} {
		denied := fetchAtOffset(t, alice, "b", ids["b"], offset)
		assert.Equal(t, kerr.TopicAuthorizationFailed.Code, denied.ErrorCode, "b at %d", offset)
		assert.Empty(t, denied.RecordBatches, "none of b's records at %d", offset)
	}
	both := fetchAt(12, "a", ids["a"], 0, 0, 50*time.Millisecond, 1)
	bt := kmsg.NewFetchRequestTopic()
	bt.Topic, bt.TopicID = "b", ids["b"]
	bt.Partitions = both.Topics[0].Partitions
	both.Topics = append(both.Topics, bt)
	resp, err := both.RequestWith(testCtx(t), alice)
	require.NoError(t, err)
	codes := map[[16]byte]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes[rt.TopicID] = rp.ErrorCode
			if rt.TopicID == ids["b"] {
				assert.Empty(t, rp.RecordBatches, "b's records never reach alice")
			}
		}
	}
	assert.Equal(t, map[[16]byte]int16{ids["a"]: 0, ids["b"]: kerr.TopicAuthorizationFailed.Code}, codes, "one fetch of both")

	assert.Equal(t, []string{"a"}, topicNames(metadataOf(t, alice)), "b is hidden")
	named := metadataOf(t, alice, "b")
	require.Len(t, named.Topics, 1)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, named.Topics[0].ErrorCode)
	assert.ElementsMatch(t, []string{"a", "b"}, topicNames(metadataOf(t, bob)), "bob may read both")

	assert.ErrorIs(t, produceErr(t, alice, "a"), kerr.TopicAuthorizationFailed, "READ is no WRITE")
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "b"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	loResp, err := lo.RequestWith(testCtx(t), srvBroker(t, alice)) // kgo would shard it by its metadata, which refuses b
	require.NoError(t, err)
	require.Len(t, loResp.Topics, 1)
	assert.Equal(t, kerr.TopicAuthorizationFailed.Code, loResp.Topics[0].Partitions[0].ErrorCode, "b's offsets")

	// A binding revoked upstream stops allowing at the proxy.
	_, err = kadm.NewClient(admin).DeleteACLs(testCtx(t), kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("a").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return fetchAtOffset(t, alice, "a", ids["a"], 0).ErrorCode == kerr.TopicAuthorizationFailed.Code
	},
		15*time.Second, 20*time.Millisecond, "alice's READ revoked")
}
