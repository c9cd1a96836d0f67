package server

import (
	"flag"
	"io"
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
	}))
	assert.Equal(t, []string{"b1:9092", "b2:9092"}, cfg.seeds())
	assert.Equal(t, "0.0.0.0:9192", cfg.Listener)
	assert.Equal(t, int32(7), cfg.NodeID)
	assert.Equal(t, 250*time.Millisecond, cfg.TailFetchMaxWait)
	assert.Equal(t, 1024, cfg.CacheBytesPerPartition)
	assert.Equal(t, 5*time.Second, cfg.TailIdle)
	assert.Equal(t, int32(65536), cfg.TailFetchPartitionMax)
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
		{name: "tiny requests", tweak: func(c *Config) { c.SocketRequestMaxBytes = 100 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			tt.tweak(&cfg)
			assert.Error(t, cfg.validate())
		})
	}
}
