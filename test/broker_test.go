package test

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// startBroker runs a broker on a free loopback port until the test ends.
func startBroker(t *testing.T, tweak ...func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.Default()
	cfg.Listener = "127.0.0.1:0"
	for _, f := range tweak {
		f(&cfg)
	}
	srv, _ := runBroker(t, cfg)
	return srv
}

// runBroker starts a broker on cfg; stop closes it gracefully, once,
// whether the test calls it or the test ends.
func runBroker(t testing.TB, cfg server.Config) (srv *server.Server, stop func()) {
	t.Helper()
	srv, err := server.New(cfg, nil)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(ctx))
		require.NoError(t, <-served)
	}
	t.Cleanup(stop)
	return srv, stop
}

// newClient returns a kgo client of srv, closed when the test ends.
func newClient(t testing.TB, srv *server.Server, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(srv.Addr().String()),
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates a topic through a client's raw request.
func createTopic(t testing.TB, cl *kgo.Client, name string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Equal(t, int16(0), resp.Topics[0].ErrorCode)
}

// rawConn speaks the wire protocol with kmsg on one connection, for tests
// that need exact requests, pipelining, and control of the socket.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	rd   *bufio.Reader
	corr int32
	fmt  *kmsg.RequestFormatter
}

func dialRaw(t *testing.T, srv *server.Server) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", srv.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc, rd: bufio.NewReader(nc), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e"))}
}

// send writes req and returns its correlation id.
func (c *rawConn) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.nc.Write(c.fmt.AppendRequest(nil, req, c.corr))
	require.NoError(c.t, err)
	return c.corr
}

// recv reads the next response into resp (its version set) within
// timeout, and returns its correlation id.
func (c *rawConn) recv(resp kmsg.Response, timeout time.Duration) int32 {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	_, err := io.ReadFull(c.rd, size[:])
	require.NoError(c.t, err)
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(c.rd, buf)
	require.NoError(c.t, err)
	rd := kbin.Reader{Src: buf}
	corr := rd.Int32()
	if resp.IsFlexible() && kmsg.Key(resp.Key()) != kmsg.ApiVersions {
		kmsg.SkipTags(&rd)
	}
	require.NoError(c.t, rd.Complete())
	require.NoError(c.t, resp.ReadFrom(rd.Src))
	return corr
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 5*time.Millisecond, msg)
}
