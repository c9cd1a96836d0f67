package server

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testConn is a connection a test drives by hand, without its reader and
// writer goroutines: requests take their place in the response order as
// the reader gives it, go to their handler or straight into a delayed
// operation, and their answers are read from their slots. It lets a test
// reach a waiting operation directly.
type testConn struct {
	t *testing.T
	c *conn
}

func newTestConn(t *testing.T, s *Server) *testConn {
	t.Helper()
	near, far := net.Pipe()
	c := newConn(s, near)
	t.Cleanup(func() {
		c.shutdown() // answers whatever still waits, as a closing connection does
		_ = far.Close()
	})
	return &testConn{t: t, c: c}
}

// request returns kreq as read from the connection, with its slot.
func (tc *testConn) request(kreq kmsg.Request) *request {
	tc.t.Helper()
	r := &request{s: tc.c.s, c: tc.c, kreq: kreq, clientVersion: kreq.GetVersion(), at: time.Now()}
	require.True(tc.t, tc.c.reserve(r))
	return r
}

// answer returns r's answer and whether it has one yet.
func (tc *testConn) answer(r *request) (kmsg.Response, bool) {
	tc.c.mu.Lock()
	defer tc.c.mu.Unlock()
	return r.slot.resp, r.slot.ready
}

// await polls, up to a deadline, for r's answer.
func (tc *testConn) await(r *request) kmsg.Response {
	tc.t.Helper()
	var resp kmsg.Response
	require.Eventually(tc.t, func() bool {
		var ok bool
		resp, ok = tc.answer(r)
		return ok
	}, 5*time.Second, time.Millisecond, "the request is answered")
	return resp
}
