package server

// ApiVersions: v0-v4.
//
// Answered by the proxy: every API it serves, each with the versions both
// it and every upstream broker handshaken serve (the upstream side keeps
// their intersection), so that a client never sends upstream a version
// upstream does not know: forwarded requests go at the client's version.
// An API upstream does not serve is not listed. ApiVersions itself is
// listed with the proxy's own range. A request newer than v4 is answered
// in v0 with UNSUPPORTED_VERSION and the list, as Kafka answers it. Before
// the proxy has reached any upstream broker, the connection is closed: the
// client retries it like a broker that is not up yet.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/proxy/upstream"
)

func init() { serve(kmsg.ApiVersions, 0, 4, (*Server).handleApiVersions).Handler.local = true }

func (s *Server) handleApiVersions(r *request) {
	s.cl.Versions(func(vs upstream.Versions, err error) {
		if err != nil {
			r.hangUp(err)
			return
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		if !apis.Supports(int16(kmsg.ApiVersions), r.ClientVersion) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
		}
		for _, a := range apis.APIs() {
			lo, hi := a.Min, a.Max
			if !a.Handler.local {
				up, ok := vs[int16(a.Key)]
				if !ok {
					continue
				}
				lo, hi = max(lo, up.Min), min(hi, up.Max)
			}
			if lo > hi {
				continue
			}
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(a.Key), MinVersion: lo, MaxVersion: hi})
		}
		r.Respond(resp)
	})
}
