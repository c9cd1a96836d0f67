package server

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFlagsSetTheConfig(t *testing.T) {
	cfg := Default()
	require.NoError(t, cfg.validate(), "the defaults are valid")
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs)
	require.NoError(t, fs.Parse([]string{
		"--upstream", "b1:9092, b2:9092", "--listeners", "0.0.0.0:9192", "--node.id", "7",
		"--tail.fetch.max.wait.ms", "250", "--cache.bytes.per.partition", "1024", "--tail.idle.ms=5000",
		"--tail.fetch.partition.max.bytes", "65536",
		"--max.incremental.fetch.session.cache.slots", "10", "--min.incremental.fetch.session.eviction.ms", "60000",
	}))
	assert.Equal(t, []string{"b1:9092", "b2:9092"}, cfg.seeds())
	assert.Equal(t, "0.0.0.0:9192", cfg.Listener)
	assert.Equal(t, int32(7), cfg.NodeID)
	assert.Equal(t, 250*time.Millisecond, cfg.TailFetchMaxWait)
	assert.Equal(t, 1024, cfg.CacheBytesPerPartition)
	assert.Equal(t, 5*time.Second, cfg.TailIdle)
	assert.Equal(t, int32(65536), cfg.TailFetchPartitionMax)
	assert.Equal(t, 10, cfg.FetchSessionSlots)
	assert.Equal(t, time.Minute, cfg.FetchSessionEviction)
	assert.Equal(t, "1000", fs.Lookup("max.incremental.fetch.session.cache.slots").DefValue, "Kafka's default")
	assert.Contains(t, fs.Lookup("tail.fetch.max.wait.ms").DefValue, "500", "the flag shows the default")
}

func TestLoadProperties(t *testing.T) {
	cfg := Default()
	require.NoError(t, cfg.LoadProperties(strings.NewReader(`
# a Kafka-style properties file
upstream = kafka-1:9092,kafka-2:9092
! another comment
metadata.max.age.ms: 60000
request.timeout.ms=1000
`)))
	assert.Equal(t, "kafka-1:9092,kafka-2:9092", cfg.Upstream)
	assert.Equal(t, time.Minute, cfg.MetadataMaxAge)
	assert.Equal(t, time.Second, cfg.RequestTimeout)

	tests := []struct {
		name, in, want string
	}{
		{name: "unknown name", in: "upstreams=x:1\n", want: `line 1: unknown config "upstreams"`},
		{name: "bad value", in: "\nnode.id=seven\n", want: "line 2: node.id"},
		{name: "no value", in: "upstream\n", want: "line 1: want name=value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			err := cfg.LoadProperties(strings.NewReader(tt.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		tweak func(*Config)
	}{
		{name: "no upstream", tweak: func(c *Config) { c.Upstream = " , " }},
		{name: "an upstream without a port", tweak: func(c *Config) { c.Upstream = "kafka" }},
		{name: "a negative node id", tweak: func(c *Config) { c.NodeID = -1 }},
		{name: "no cache", tweak: func(c *Config) { c.CacheBytesPerPartition = 0 }},
		{name: "no tail wait", tweak: func(c *Config) { c.TailFetchMaxWait = 0 }},
		{name: "backoffs the wrong way round", tweak: func(c *Config) { c.ReconnectBackoff = 2 * c.ReconnectBackoffMax }},
		{name: "negative fetch session slots", tweak: func(c *Config) { c.FetchSessionSlots = -1 }},
		{name: "tiny requests", tweak: func(c *Config) { c.SocketRequestMaxBytes = 100 }},
		{name: "two listeners", tweak: func(c *Config) { c.Listener = "PLAINTEXT://127.0.0.1:1,SSL://127.0.0.1:2" }},
		{name: "TLS without a keystore", tweak: func(c *Config) { c.Listener = "SSL://127.0.0.1:9192" }},
		{name: "SASL without users", tweak: func(c *Config) { c.Listener = "SASL_PLAINTEXT://127.0.0.1:9192" }},
		{name: "an unknown mechanism", tweak: func(c *Config) {
			c.Listener, c.UsersFile, c.SASLMechanisms = "SASL_PLAINTEXT://127.0.0.1:9192", "users", []string{"GSSAPI"}
		}},
		{name: "an unknown upstream protocol", tweak: func(c *Config) { c.UpstreamProtocol = "TLS" }},
		{name: "SASL upstream without credentials", tweak: func(c *Config) { c.UpstreamProtocol = "SASL_SSL" }},
		{name: "an unknown upstream mechanism", tweak: func(c *Config) {
			c.UpstreamProtocol, c.UpstreamUser, c.UpstreamPassword, c.UpstreamMechanism = "SASL_PLAINTEXT", "u", "p", "GSSAPI"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			tt.tweak(&cfg)
			assert.Error(t, cfg.validate())
		})
	}
}

func TestLoadUsers(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "users")
	require.NoError(t, os.WriteFile(good, []byte("# users\nalice=a=b\n\n bob = secret\n"), 0o600))
	us, err := loadUsers(good)
	require.NoError(t, err)
	for _, u := range []string{"alice", "bob"} {
		for _, m := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			_, ok := us.Credential(u, m)
			assert.True(t, ok, "%s %s", u, m)
		}
	}
	for _, bad := range []string{"alice\n", "=pw\n", "alice=\n"} {
		p := filepath.Join(dir, "bad")
		require.NoError(t, os.WriteFile(p, []byte(bad), 0o600))
		_, err := loadUsers(p)
		assert.Error(t, err, "%q", bad)
	}
	_, err = loadUsers(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "sasl.users.file")
}
