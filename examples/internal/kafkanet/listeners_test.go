package kafkanet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseListeners(t *testing.T) {
	got, err := ParseListeners("127.0.0.1:9092", "", "")
	require.NoError(t, err)
	assert.Equal(t, []ListenerConfig{{Name: "PLAINTEXT", Protocol: Plaintext, Addr: "127.0.0.1:9092"}}, got)

	got, err = ParseListeners("127.0.0.1:9092", "example.com:9092", "")
	require.NoError(t, err)
	assert.Equal(t, "example.com:9092", got[0].Advertised, "a bare advertised address is the first listener's")

	got, err = ParseListeners("PLAINTEXT://127.0.0.1:9092,secure://127.0.0.1:9093,SSL://:9094", "SECURE://example.com:19093",
		"SECURE:SASL_SSL,INTERNAL:PLAINTEXT")
	require.NoError(t, err)
	assert.Equal(t, []ListenerConfig{
		{Name: "PLAINTEXT", Protocol: Plaintext, Addr: "127.0.0.1:9092"},
		{Name: "SECURE", Protocol: SASLSSL, Addr: "127.0.0.1:9093", Advertised: "example.com:19093"},
		{Name: "SSL", Protocol: SSL, Addr: ":9094"},
	}, got)

	for _, bad := range []struct{ listeners, advertised, protocolMap, want string }{
		{"CLIENT://127.0.0.1:9092", "", "", "has no protocol"},
		{"CLIENT://127.0.0.1:9092", "", "CLIENT:TLS", "listener.security.protocol.map"},
		{"PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093", "", "", "named twice"},
		{"PLAINTEXT://127.0.0.1", "", "", "listeners"},
		{"nonsense", "", "", "listeners"},
		{"PLAINTEXT://127.0.0.1:9092", "OTHER://example.com:9092", "", "not among the listeners"},
		{"://127.0.0.1:9092", "", "", "NAME://host:port"},
	} {
		_, err := ParseListeners(bad.listeners, bad.advertised, bad.protocolMap)
		assert.ErrorContains(t, err, bad.want, "%+v", bad)
	}
}
