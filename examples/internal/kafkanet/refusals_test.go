package kafkanet

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestRefusalsLoggedOncePerClientPerInterval: every refusal is counted by
// reason; its log line is written once per client host and reason per
// interval, whatever the client's port.
func TestRefusalsLoggedOncePerClientPerInterval(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	now := time.Unix(1000, 0)
	r, err := newRefusals(prometheus.NewRegistry(), "test", zap.New(core), func() time.Time { return now })
	require.NoError(t, err)
	addr := func(s string) net.Addr {
		a, err := net.ResolveTCPAddr("tcp", s)
		require.NoError(t, err)
		return a
	}
	for port := range 100 {
		r.refuse(addr("10.0.0.1:"+itoa(1000+port)), refuseMaxConnections)
	}
	r.refuse(addr("10.0.0.1:1"), refuseSlowRequest)
	r.refuse(addr("10.0.0.2:1"), refuseMaxConnections)
	assert.Equal(t, 101.0, testutil.ToFloat64(r.counter.WithLabelValues(refuseMaxConnections)), "every refusal counted")
	assert.Equal(t, 3, logs.Len(), "one line per host and reason")

	now = now.Add(refusalLogInterval - time.Second)
	r.refuse(addr("10.0.0.1:7"), refuseMaxConnections)
	assert.Equal(t, 3, logs.Len(), "not again within the interval")
	now = now.Add(time.Second)
	r.refuse(addr("10.0.0.1:7"), refuseMaxConnections)
	assert.Equal(t, 4, logs.Len(), "again after it")
	last := logs.All()[3].ContextMap()
	assert.Equal(t, refuseMaxConnections, last["reason"])
	assert.Equal(t, "10.0.0.1", last["client"])
}

// TestRefusalLogForgets: the hosts remembered are bounded.
func TestRefusalLogForgets(t *testing.T) {
	now := time.Unix(1000, 0)
	r, err := newRefusals(prometheus.NewRegistry(), "test", zap.NewNop(), func() time.Time { return now })
	require.NoError(t, err)
	for i := range 3 * refusalLogKeys {
		now = now.Add(time.Millisecond)
		r.refuse(&net.TCPAddr{IP: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)), Port: 1}, refuseMaxConnections)
	}
	assert.LessOrEqual(t, len(r.last), refusalLogKeys)
}

func itoa(i int) string { return strconv.Itoa(i) }
