package kafkanet

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// parse decodes a request header and body with kmsg. An unknown key or a
// version the Handler does not serve is refused, as Kafka refuses it; an
// ApiVersions newer than the Handler's is read as v0, to be answered
// UNSUPPORTED_VERSION with the versions served.
func (c *Conn) parse(body []byte) (*Request, error) {
	rd := kbin.Reader{Src: body}
	key, version, corr := rd.Int16(), rd.Int16(), rd.Int32()
	clientID := rd.NullableString()
	if !rd.Ok() {
		return nil, fmt.Errorf("%w: truncated header", ErrBadRequest)
	}
	kreq := kmsg.RequestForKey(key)
	if kreq == nil {
		return nil, fmt.Errorf("%w: unknown api key %d", ErrBadRequest, key)
	}
	r := &Request{Msg: kreq, ClientVersion: version, Received: time.Now(), BodySize: len(body), conn: c, corr: corr}
	if clientID != nil {
		r.ClientID = *clientID
	}
	if !c.s.handler.Supports(key, version) {
		// ApiVersions newer than ours is answered (in v0) with the ranges
		// we serve; anything else unsupported closes the connection.
		if kmsg.Key(key) == kmsg.ApiVersions {
			kreq.SetVersion(0)
			return r, nil
		}
		return nil, fmt.Errorf("%w: %s v%d is not supported", ErrBadRequest, kmsg.NameForKey(key), version)
	}
	kreq.SetVersion(version)
	if kreq.IsFlexible() {
		skipTags(&rd)
	}
	if err := rd.Complete(); err != nil {
		return nil, fmt.Errorf("%w: %s v%d header: %v", ErrBadRequest, kmsg.NameForKey(key), version, err)
	}
	if err := c.decode(kreq, rd.Src); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %w", ErrBadRequest, kmsg.NameForKey(key), version, err)
	}
	return r, nil
}

// skipTags skips a request header's tagged fields. kmsg.SkipTags loops as
// many times as the count read says, even after the bytes run out, so a
// count of 2^32-1 in a 20-byte header kept the reader spinning for tens of
// seconds; this stops at the end of the bytes. (kmsg's body decoders have
// the same loop for every flexible struct's tags, which a server cannot
// reach: see decode.)
func skipTags(rd *kbin.Reader) {
	for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
		rd.Uvarint()               // the tag
		rd.Span(int(rd.Uvarint())) // its value
	}
}

// decode decodes a request body with kmsg, on the reader's goroutine,
// holding one of the server's decode slots (decodeSlots: GOMAXPROCS of
// them by default): however many connections send at once, no more bodies
// are being decoded than there are cores to decode them, and a connection
// decodes one at a time, its reader waiting. kmsg bounds the work of a
// decode by the bytes it is given (since v1.15.1: its loops stop at the
// end of the input, and an array's count is checked against the smallest
// encoding of its elements; the broker's kmsg_linux_test.go keeps the
// reproducers of v1.15.0's unbounded loops), so a decode costs CPU in
// proportion to the body, which socket.request.max.bytes bounds, and never
// runs on after its connection is gone: nothing is abandoned, and no
// wall-clock budget can cut a healthy request short on a busy machine.
func (c *Conn) decode(kreq kmsg.Request, src []byte) error {
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
