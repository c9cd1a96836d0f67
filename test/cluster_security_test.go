package test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gopurgatory/purgatory/examples/broker/server"
	"github.com/gopurgatory/purgatory/examples/tlsfiles"
)

// TestClusterExternalListener: three brokers speak PLAINTEXT between
// them on INTERNAL (their --cluster addresses) and serve clients over
// SASL_SSL on EXTERNAL; each registers its endpoints with the controller,
// so a client bootstrapped from one broker's EXTERNAL listener is told
// every broker at its EXTERNAL address, never an INTERNAL one, produces
// with acks=all to three replicas, consumes in a group, and finds its
// coordinator there.
func TestClusterExternalListener(t *testing.T) {
	certs := makeCerts(t)
	c := startCluster(t, 3, func(cfg *server.Config) {
		cfg.Listener = "INTERNAL://" + cfg.Listener + ",EXTERNAL://127.0.0.1:0"
		cfg.ProtocolMap = "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL"
		cfg.InterBrokerListener = "INTERNAL"
		cfg.Keystore, cfg.Truststore = certs.broker, certs.ca
		cfg.AddScram = "SCRAM-SHA-512=[name=alice,password=alice-secret]"
		cfg.DefaultReplication = 3
	})
	external := map[string]bool{}
	for id := int32(1); id <= 3; id++ {
		external[listenerAddr(t, c.broker(id), "EXTERNAL")] = true
	}
	cl := secureClient(t, certs, listenerAddr(t, c.broker(2), "EXTERNAL"),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("external"), kgo.ConsumeTopics("external"), kgo.ConsumerGroup("external-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var brokers []string
	require.Eventually(t, func() bool {
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			return false
		}
		brokers = brokers[:0]
		for _, b := range meta.Brokers {
			brokers = append(brokers, fmt.Sprintf("%s:%d", b.Host, b.Port))
		}
		return len(brokers) == 3
	}, 10*time.Second, 20*time.Millisecond, "every broker registered its EXTERNAL endpoint")
	for _, b := range brokers {
		assert.True(t, external[b], "%s is an EXTERNAL address (%v)", b, brokers)
	}

	_, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 3, nil, "external")
	require.NoError(t, err)
	for i := range 30 {
		require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr())
	}
	var got []string
	for len(got) < 30 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	assert.Len(t, got, 30)
	require.NoError(t, cl.CommitUncommittedOffsets(ctx))

	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{"external-group"}
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	co := resp.Coordinators[0]
	require.Zero(t, co.ErrorCode)
	assert.True(t, external[fmt.Sprintf("%s:%d", co.Host, co.Port)], "the coordinator at its EXTERNAL address")
	assert.True(t, slices.Contains(brokers, fmt.Sprintf("%s:%d", co.Host, co.Port)))
}

// TestClusterSpeaksTLS: three brokers whose inter-broker listener is SSL
// with client certificates required, and an authorizer: the peers'
// requests (replica fetches, heartbeats, ISR changes) and the metadata
// quorum's Raft traffic go over mutual TLS with each broker's
// certificate, whose subject is their principal (a super user here, as
// Kafka's brokers must hold CLUSTER_ACTION), and an acks=all produce to
// three replicas is acknowledged; a client without a certificate cannot
// reach them.
func TestClusterSpeaksTLS(t *testing.T) {
	certs := makeCerts(t)
	c := startCluster(t, 3, func(cfg *server.Config) {
		cfg.Listener = "SSL://" + cfg.Listener
		cfg.Keystore, cfg.Truststore, cfg.ClientAuth = certs.broker, certs.ca, "required"
		cfg.DefaultReplication, cfg.MinInsyncReplicas = 3, 3
		cfg.Authorizer, cfg.SuperUsers = "acl", "User:CN=broker;User:CN=alice,O=purgatory"
	})
	withCert, err := tlsfiles.ClientConfig(tlsfiles.Files{Truststore: certs.ca, Keystore: certs.client})
	require.NoError(t, err)
	seeds := []string{c.broker(1).Addr().String(), c.broker(2).Addr().String(), c.broker(3).Addr().String()}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(withCert), kgo.DefaultProduceTopic("tls"),
		kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, "tls")
	require.NoError(t, err)
	for i := range 10 {
		require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(), "acks=all on three replicas")
	}
	leader := c.replica(1, "tls", 0)
	assert.Len(t, leader.ISR, 3, "every follower fetches over TLS")

	noCert := secureClient(t, certs, seeds[0], kgo.RequestRetries(0))
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	defer cancelShort()
	assert.Error(t, noCert.Ping(short))

	// The quorum's port speaks TLS and wants a certificate of the CA.
	voter := strings.TrimPrefix(strings.Split(c.cfgs[0].ControllerQuorumVoters, ",")[0], "1@")
	quorum := func(cfg *tls.Config) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", voter, cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = conn.Read(make([]byte, 1)) // the server's verdict on our certificate, if any
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return nil // accepted: Raft waits for our request
		}
		return err
	}
	withCert.ServerName = "127.0.0.1"
	assert.NoError(t, quorum(withCert), "a voter's certificate is accepted")
	trustOnly, err := tlsfiles.ClientConfig(tlsfiles.Files{Truststore: certs.ca})
	require.NoError(t, err)
	trustOnly.ServerName = "127.0.0.1"
	assert.Error(t, quorum(trustOnly), "no certificate, no quorum")
}

// TestScramAlterForwarded: AlterUserScramCredentials sent to a broker
// that is not the active controller is forwarded to it, and the
// credential is then described, and authenticates, on every broker.
func TestScramAlterForwarded(t *testing.T) {
	c := startCluster(t, 3)
	cl := c.client()
	ctrl := c.activeController(cl)
	other := ctrl%3 + 1
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations = "carol", 2, 4096 // SCRAM-SHA-512
	up.Salt, up.SaltedPassword = []byte("salt-of-carol"), make([]byte, 64)
	req.Upsertions = append(req.Upsertions, up)
	resp, err := req.RequestWith(ctx, cl.Broker(int(other)))
	require.NoError(t, err)
	require.Len(t, resp.Results, 1)
	require.Zero(t, resp.Results[0].ErrorCode, "answered through broker %d, the controller being %d: %v",
		other, ctrl, kerr.ErrorForCode(resp.Results[0].ErrorCode))

	for id := int32(1); id <= 3; id++ {
		require.Eventually(t, func() bool {
			d := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			dr, err := d.RequestWith(ctx, cl.Broker(int(id)))
			if err != nil {
				return false
			}
			for _, r := range dr.Results {
				if r.User == "carol" && r.ErrorCode == 0 && len(r.CredentialInfos) == 1 {
					return true
				}
			}
			return false
		}, 10*time.Second, 10*time.Millisecond, "broker %d describes carol", id)
	}
}
