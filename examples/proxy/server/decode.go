package server

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// parse decodes a request's header and body. An unknown key, a version the
// proxy does not serve or a malformed request is an error, which closes
// the connection, as Kafka does; an ApiVersions newer than the proxy's is
// answered in v0 (see 18_api_versions.go).
func (c *conn) parse(body []byte) (*request, error) {
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
	r := &request{s: c.s, c: c, kreq: kreq, corr: corr, clientVersion: version, at: time.Now()}
	if clientID != nil {
		r.clientID = *clientID
	}
	if !supports(key, version) {
		if kmsg.Key(key) == kmsg.ApiVersions {
			kreq.SetVersion(0) // answered in v0 with what the proxy serves
			return r, nil
		}
		return nil, fmt.Errorf("%w: %s v%d is not served", ErrBadRequest, kmsg.NameForKey(key), version)
	}
	kreq.SetVersion(version)
	if kreq.IsFlexible() {
		// The header's tags, bounded by the bytes there are (kmsg's
		// SkipTags trusts the count).
		for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
	}
	if err := rd.Complete(); err != nil {
		return nil, fmt.Errorf("%w: %s v%d header: %v", ErrBadRequest, kmsg.NameForKey(key), version, err)
	}
	if err := c.decode(kreq, rd.Src); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %w", ErrBadRequest, kmsg.NameForKey(key), version, err)
	}
	return r, nil
}

// decode decodes a body with kmsg, inline: since kmsg v1.15.1 its decoders
// stop a tag loop at the end of the input and check every array count
// against the bytes left, so a forged count fails at once instead of
// spinning (the broker's kmsg_linux_test.go keeps the reproducers), and a
// wall-clock budget, which dropped healthy requests on a busy machine, is
// not needed.
func (c *conn) decode(kreq kmsg.Request, src []byte) error { return kreq.ReadFrom(src) }
