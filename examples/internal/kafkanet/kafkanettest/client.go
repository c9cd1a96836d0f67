package kafkanettest

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client is one connection to a server under test. Its methods fail the
// test on an error, but ClosedByPeer.
type Client struct {
	T    testing.TB
	NC   net.Conn // the connection itself, for what the methods do not do
	corr int32
}

// Dial connects to addr; the connection is closed when the test ends.
func Dial(t testing.TB, addr string) *Client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &Client{T: t, NC: nc}
}

// Send writes req at its set version, with client id "test", and returns
// its correlation id.
func (c *Client) Send(req kmsg.Request) int32 {
	c.T.Helper()
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
	c.WriteFrame(body)
	return c.corr
}

// SendTogether writes the requests' frames in one write, as Send would one
// by one.
func (c *Client) SendTogether(reqs ...kmsg.Request) {
	c.T.Helper()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	var frames []byte
	for _, req := range reqs {
		c.corr++
		// AppendRequest writes the length at dst[0:4]: give it an empty dst.
		frames = append(frames, f.AppendRequest(nil, req, c.corr)...)
	}
	c.WriteRaw(frames)
}

// WriteFrame writes body with its size before it.
func (c *Client) WriteFrame(body []byte) {
	c.T.Helper()
	c.WriteRaw(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...))
}

// WriteRaw writes b as it is.
func (c *Client) WriteRaw(b []byte) {
	c.T.Helper()
	_ = c.NC.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.NC.Write(b)
	require.NoError(c.T, err)
}

// Recv reads the next answer into resp (whose version must be set) and
// returns its correlation id.
func (c *Client) Recv(resp kmsg.Response) int32 {
	c.T.Helper()
	_ = c.NC.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	_, err := io.ReadFull(c.NC, size[:])
	require.NoError(c.T, err)
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(c.NC, buf)
	require.NoError(c.T, err)
	corr := int32(binary.BigEndian.Uint32(buf))
	buf = buf[4:]
	if resp.IsFlexible() && kmsg.Key(resp.Key()) != kmsg.ApiVersions {
		buf = buf[1:] // empty header tags
	}
	require.NoError(c.T, resp.ReadFrom(buf))
	return corr
}

// RoundTrip sends req and reads its answer, which must be the next one.
func (c *Client) RoundTrip(req kmsg.Request) kmsg.Response {
	c.T.Helper()
	corr := c.Send(req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	require.Equal(c.T, corr, c.Recv(resp), "answers come in request order")
	return resp
}

// ClosedByPeer reports whether the server closed the connection within
// 10s: the read ends with EOF or a reset, not with its own deadline, and no
// byte came first.
func (c *Client) ClosedByPeer() bool {
	_ = c.NC.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.NC.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return n == 0 && err != nil
}
