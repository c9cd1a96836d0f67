package kafkanet

import (
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Recorder is a connection of a Server with no client behind its socket
// and no reader or writer goroutine, for tests that drive a Handler by
// hand, as net/http/httptest's ResponseRecorder: each request takes its
// place in the connection's answer order as the reader would give it,
// the test hands it to whatever it tests (a handler, or straight to a
// delayed operation), and reads its answer from its place. Close ends the
// connection as a client going away does.
type Recorder struct {
	c   *Conn
	far net.Conn
}

// NewRecorder returns a connection of s for a test; Close it when done.
func (s *Server) NewRecorder() *Recorder {
	near, far := net.Pipe()
	return &Recorder{c: newConn(s, near, nil), far: far}
}

// Parse reads body, a request frame's body (the frame without its size),
// as the connection's reader does, and gives the request its place in the
// answer order. An error is what the reader would close the connection
// for.
func (rec *Recorder) Parse(body []byte) (*Request, error) {
	r, err := rec.c.parse(body)
	if err != nil {
		return nil, err
	}
	rec.reserve(r)
	return r, nil
}

// Request returns msg as if read from the connection (its version as
// set, client id "test"), with its place in the answer order.
func (rec *Recorder) Request(msg kmsg.Request) *Request {
	r := &Request{Msg: msg, ClientID: "test", ClientVersion: msg.GetVersion(), Received: time.Now(), conn: rec.c}
	rec.reserve(r)
	return r
}

// reserve gives r its place, as the reader does; a Recorder closed
// already has none to give, which is the test's mistake.
func (rec *Recorder) reserve(r *Request) {
	if !rec.c.reserve(r) {
		panic("kafkanet: a request on a closed Recorder")
	}
}

// Answer returns r's answer and whether it has one yet (an answer
// without a response, NoResponse or HangUp, is nil).
func (rec *Recorder) Answer(r *Request) (kmsg.Response, bool) {
	rec.c.mu.Lock()
	defer rec.c.mu.Unlock()
	return r.slot.resp, r.slot.ready
}

// Close closes the connection as the client going away does: its context
// is cancelled, which answers the operations waiting on its behalf (their
// answers are recorded, and go nowhere else).
func (rec *Recorder) Close() {
	rec.c.shutdown()
	_ = rec.far.Close()
}
