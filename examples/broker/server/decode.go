package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// decode decodes a request body with kmsg, on the reader's goroutine,
// holding one of the broker's decode slots (decodeSlots: GOMAXPROCS of
// them): however many connections send at once, no more bodies are being
// decoded than there are cores to decode them, and a connection decodes
// one at a time, its reader waiting. kmsg bounds the work of a decode by
// the bytes it is given (since v1.15.1: its loops stop at the end of the
// input, and an array's count is checked against the smallest encoding of
// its elements; kmsg_linux_test.go keeps the reproducers of v1.15.0's
// unbounded loops), so a decode costs CPU in proportion to the body, which
// socket.request.max.bytes bounds, and never runs on after its
// connection is gone: nothing is abandoned, and no wall-clock budget can
// cut a healthy request short on a busy machine.
func (c *conn) decode(kreq kmsg.Request, src []byte) error {
	select {
	case c.s.decodeSlots <- struct{}{}:
	default:
		c.s.decodesWaiting.Add(1)
		select {
		case c.s.decodeSlots <- struct{}{}:
			c.s.decodesWaiting.Add(-1)
		case <-c.quit:
			c.s.decodesWaiting.Add(-1)
			return errStopReading
		}
	}
	defer func() { <-c.s.decodeSlots }()
	return kreq.ReadFrom(src)
}
