package server

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestApiVersions(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1.0.0"
		resp := c.RoundTrip(req).(*kmsg.ApiVersionsResponse)
		assert.Equal(t, int16(0), resp.ErrorCode, "v%d", v)
		require.NotEmpty(t, resp.ApiKeys)
	}
}

func TestApiVersionsNewerThanBroker(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	// A version the broker does not know: answered in v0, as Kafka does.
	body := []byte{0, 18, 0x7f, 0x00, 0, 0, 0, 9, 0xff, 0xff, 0xde, 0xad}
	c.WriteFrame(body)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	assert.Equal(t, int32(9), c.Recv(resp))
	assert.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
	assert.NotEmpty(t, resp.ApiKeys, "with the ranges the broker serves")
}

func TestBadRequestsCloseTheConnection(t *testing.T) {
	s := newTestServer(t)
	tests := []struct {
		name  string
		frame []byte
	}{
		{"unknown api key", []byte{0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff}},
		{"api the broker does not serve", []byte{0, byte(kmsg.AlterReplicaLogDirs), 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0, 5, 'P', 'L', 'A', 'I', 'N'}},
		{"truncated header", []byte{0, 18, 0, 3, 0, 0}},
		{"malformed body", []byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 0, 0x7f}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, s)
			c.WriteFrame(tt.frame)
			assert.True(t, c.ClosedByPeer())
		})
	}
	// The broker goes on serving others.
	c := dialRaw(t, s)
	c.RoundTrip(kmsg.NewPtrApiVersionsRequest())
}

func TestOversizedRequestClosesTheConnection(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.SocketRequestMaxBytes = 1 << 16 })
	c := dialRaw(t, s)
	size := binary.BigEndian.AppendUint32(nil, 1<<20)
	_, err := c.NC.Write(size)
	require.NoError(t, err)
	assert.True(t, c.ClosedByPeer(), "refused from the size prefix, before reading the body")
}

func TestPipelinedAnswersInOrder(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	var corrs []int32
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		corrs = append(corrs, c.Send(req))
	}
	for i, want := range corrs {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(int16(i))
		assert.Equal(t, want, c.Recv(resp))
	}
}

func TestHugeHeaderTagCountIsRefusedQuickly(t *testing.T) {
	s := newTestServer(t)
	c := dialRaw(t, s)
	// ApiVersions v3 (flexible) whose header claims 2^32-1 tagged fields
	// in the few bytes that follow.
	c.WriteFrame([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0})
	// Spinning through the count took about 40 s; refusing it, nothing.
	_ = c.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.NC.Read(make([]byte, 1))
	var ne net.Error
	require.Error(t, err)
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "closed at once as malformed, not still spinning: %v", err)
}

// TestCloseBeforeServe: a Close that comes before Serve has started (as when
// a process is told to stop while starting) makes Serve return nil at once,
// and neither waits for the other.
func TestCloseBeforeServe(t *testing.T) {
	cfg := Default()
	cfg.Listener = "127.0.0.1:0"
	s, err := New(cfg, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close(context.Background()))
	require.NoError(t, s.Serve())
}
