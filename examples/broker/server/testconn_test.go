package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// testConn is a connection a test drives by hand, without its reader and
// writer goroutines (kafkanet.Recorder): requests take their place in the
// response order as the reader gives it, go to their handler or straight
// into a delayed operation, and their answers are read from their places.
// It lets a test reach a waiting operation directly.
type testConn struct {
	t   *testing.T
	rec *kafkanet.Recorder
}

func newTestConn(t *testing.T, s *Server) *testConn {
	t.Helper()
	rec := s.net.NewRecorder()
	t.Cleanup(rec.Close) // answers whatever still waits, as a closing connection does
	return &testConn{t: t, rec: rec}
}

// request returns kreq as read from the connection, with its place.
func (tc *testConn) request(kreq kmsg.Request) *kafkanet.Request {
	tc.t.Helper()
	return tc.rec.Request(kreq)
}

// answer returns r's answer and whether it has one yet.
func (tc *testConn) answer(r *kafkanet.Request) (kmsg.Response, bool) { return tc.rec.Answer(r) }

// await polls, up to a deadline, for r's answer.
func (tc *testConn) await(r *kafkanet.Request) kmsg.Response {
	tc.t.Helper()
	var resp kmsg.Response
	require.Eventually(tc.t, func() bool {
		var ok bool
		resp, ok = tc.answer(r)
		return ok
	}, 5*time.Second, time.Millisecond, "the request is answered")
	return resp
}
