package server

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newTestServer starts a broker on a free loopback port, closed at the end
// of the test.
func newTestServer(t *testing.T, tweak ...func(*Config)) *Server {
	t.Helper()
	cfg := Default()
	cfg.Listener = "127.0.0.1:0"
	for _, f := range tweak {
		f(&cfg)
	}
	s, err := New(cfg, nil)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Close(ctx))
		require.NoError(t, <-served)
	})
	return s
}

// rawConn speaks the wire protocol with kmsg only, so that a test can send
// exactly the request it wants (any version, pipelined, malformed) and see
// exactly the answer.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	corr int32
}

func dialRaw(t *testing.T, s *Server) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc}
}

// send writes req at its set version and returns its correlation id.
func (c *rawConn) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(c.corr))
	body = binary.BigEndian.AppendUint16(body, 4) // client id "test"
	body = append(body, "test"...)
	if req.IsFlexible() {
		body = append(body, 0) // no header tags
	}
	body = req.AppendTo(body)
	c.writeFrame(body)
	return c.corr
}

func (c *rawConn) writeFrame(body []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
	require.NoError(c.t, err)
}

// recv reads the next answer into resp (whose version must be set) and
// returns its correlation id.
func (c *rawConn) recv(resp kmsg.Response) int32 {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	_, err := io.ReadFull(c.nc, size[:])
	require.NoError(c.t, err)
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(c.nc, buf)
	require.NoError(c.t, err)
	corr := int32(binary.BigEndian.Uint32(buf))
	buf = buf[4:]
	if resp.IsFlexible() && kmsg.Key(resp.Key()) != kmsg.ApiVersions {
		buf = buf[1:] // empty header tags
	}
	require.NoError(c.t, resp.ReadFrom(buf))
	return corr
}

// roundTrip sends req and reads its answer.
func (c *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	require.Equal(c.t, corr, c.recv(resp), "answers come in request order")
	return resp
}

// closedByPeer reports whether the broker closed the connection within 10s:
// the read ends with EOF or a reset, not with its own deadline, and no byte
// came first.
func (c *rawConn) closedByPeer() bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.nc.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return n == 0 && err != nil
}
