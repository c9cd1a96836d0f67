package test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gopurgatory/purgatory/examples/broker/server"
	proxy "github.com/gopurgatory/purgatory/examples/proxy/server"
)

// startSecureProxy runs a proxy with a SASL_SSL listener of its own users
// (alice) in front of a broker's SASL_SSL listener, where it
// authenticates as the user proxy with SCRAM-SHA-512 and password
// upstreamPassword.
func startSecureProxy(t *testing.T, certs testCerts, upstream, upstreamPassword string) *proxy.Server {
	t.Helper()
	usersFile := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(usersFile, []byte("# the proxy's clients\nalice=alice-secret\n"), 0o600))
	return startProxy(t, upstream, func(c *proxy.Config) {
		c.Listener = "SASL_SSL://127.0.0.1:0"
		c.Keystore, c.UsersFile = certs.broker, usersFile
		c.UpstreamProtocol, c.UpstreamMechanism = "SASL_SSL", "SCRAM-SHA-512"
		c.UpstreamUser, c.UpstreamPassword, c.UpstreamTruststore = "proxy", upstreamPassword, certs.ca
	})
}

// TestProxySecureBothSides: a client authenticates to the proxy over
// SASL_SSL as one of the proxy's users, and the proxy to the broker over
// SASL_SSL as itself; produce and a consumer's long poll go through, and
// a client with a wrong password is refused by the proxy.
func TestProxySecureBothSides(t *testing.T) {
	certs := makeCerts(t)
	srv := startSecureBroker(t, certs, func(cfg *server.Config) {
		cfg.AddScram += ";SCRAM-SHA-512=[name=proxy,password=proxy-secret]"
	})
	waitScram(t, kadm.NewClient(newClient(t, srv)), "proxy")
	p := startSecureProxy(t, certs, listenerAddr(t, srv, "SECURE"), "proxy-secret")

	alice := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()
	cl := secureClient(t, certs, p.Addr().String(), kgo.SASL(alice), kgo.DefaultProduceTopic("via-proxy"),
		kgo.ConsumeTopics("via-proxy"), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 5 {
		require.NoError(t, cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr())
	}
	var got []string
	for len(got) < 5 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	assert.Equal(t, []string{"0", "1", "2", "3", "4"}, got)

	err := secureClient(t, certs, p.Addr().String(), kgo.SASL(scram.Auth{User: "alice", Pass: "nope"}.AsSha512Mechanism())).Ping(ctx)
	assert.True(t, errors.Is(err, kerr.SaslAuthenticationFailed), "%v", err)
}

// TestProxyUpstreamCredentialsRefused: a proxy whose own credentials the
// broker refuses serves nothing, and says why in its log; its clients see
// their connections closed, as by a broker that is not up.
func TestProxyUpstreamCredentialsRefused(t *testing.T) {
	certs := makeCerts(t)
	srv := startSecureBroker(t, certs, func(cfg *server.Config) {
		cfg.AddScram += ";SCRAM-SHA-512=[name=proxy,password=proxy-secret]"
	})
	waitScram(t, kadm.NewClient(newClient(t, srv)), "proxy")
	p := startSecureProxy(t, certs, listenerAddr(t, srv, "SECURE"), "wrong")
	alice := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	assert.Error(t, secureClient(t, certs, p.Addr().String(), kgo.SASL(alice)).Ping(ctx))
}
