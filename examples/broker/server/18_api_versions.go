package server

// ApiVersions: v0-v4.
//
// Lists every API and version range this broker serves. A request of a
// version newer than the broker knows is answered, as Kafka answers it, in
// v0 with UNSUPPORTED_VERSION and the ranges, so that a newer client can
// retry with a version both sides know (package kafkanet reads it as v0). Client
// software name and version (v3+) must match Kafka's pattern and fit in
// 255 bytes, else INVALID_REQUEST, with the ranges (names.go). No
// finalized features are advertised.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ApiVersions, 0, 4, (*Server).handleApiVersions) }

func (s *Server) handleApiVersions(r *kafkanet.Request) {
	resp := apiVersionsResponse()
	if !apis.Supports(int16(kmsg.ApiVersions), r.ClientVersion) {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	r.Respond(resp)
}

// apiVersionsResponse returns an ApiVersions response listing the APIs
// served.
func apiVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, a := range apis.APIs() {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{
			ApiKey:     int16(a.Key),
			MinVersion: a.Min,
			MaxVersion: a.Max,
		})
	}
	return resp
}
