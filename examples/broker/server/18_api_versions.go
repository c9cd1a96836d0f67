package server

// ApiVersions: v0-v4.
//
// Lists every API and version range this broker serves. A request of a
// version newer than the broker knows is answered, as Kafka answers it, in
// v0 with UNSUPPORTED_VERSION and the ranges, so that a newer client can
// retry with a version both sides know (package kafkanet reads it as v0). Client
// software name and version (v3+) must match Kafka's pattern and fit in
// 255 bytes, else INVALID_REQUEST, with the ranges (names.go).
//
// Features (v3+): transaction.version, supported 0-2, finalized at the
// broker's transaction.version setting (2 by default, as on a new Kafka 4
// cluster; Kafka's operator sets the level with kafka-features), at
// finalized features epoch 1:
// every broker of a cluster is started with its level and it never
// changes while they run. At 2 a client that knows KIP-890 part 2 (kgo)
// runs transaction version 2: Produce v12+ and TxnOffsetCommit v5 add
// their partitions to the transaction, and EndTxn v5 bumps the epoch.
// Other features (metadata.version, group.version) are not advertised.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.ApiVersions, 0, 4, (*Server).handleApiVersions) }

func (s *Server) handleApiVersions(r *kafkanet.Request) {
	resp := s.apiVersionsResponse()
	if !apis.Supports(int16(kmsg.ApiVersions), r.ClientVersion) {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	r.Respond(resp)
}

// The transaction.version feature (Kafka's TransactionVersion): the
// levels served, and the finalized features' epoch.
const (
	maxTransactionVersion  = 2
	finalizedFeaturesEpoch = 1
)

// apiVersionsResponse returns an ApiVersions response listing the APIs
// served and the features.
func (s *Server) apiVersionsResponse() *kmsg.ApiVersionsResponse {
	resp := apiKeysResponse()
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = "transaction.version", 0, maxTransactionVersion
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	ff := kmsg.NewApiVersionsResponseFinalizedFeature()
	ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "transaction.version", s.cfg.TransactionVersion, s.cfg.TransactionVersion
	resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	resp.FinalizedFeaturesEpoch = finalizedFeaturesEpoch
	return resp
}

// apiKeysResponse returns an ApiVersions response listing the APIs
// served, without features.
func apiKeysResponse() *kmsg.ApiVersionsResponse {
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
