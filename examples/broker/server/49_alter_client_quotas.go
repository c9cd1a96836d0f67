package server

// AlterClientQuotas: v0-v1 (KIP-546).
//
// Sets and removes client quotas: each entry names an entity (user,
// client-id, both, or ip; each part by name, or the default with a null
// name) and its operations (a key set to a value, or removed). Checked as
// Kafka's ClientQuotaControlManager checks them, each entry on its own,
// INVALID_REQUEST with Kafka's message for: an empty entity, an unknown
// type, a type twice, an empty name, ip beside user or client-id, an ip
// that is not an address (Kafka also resolves host names), an unknown key
// for the entity (producer_byte_rate, consumer_byte_rate,
// request_percentage, controller_mutation_rate for users and client ids;
// connection_creation_rate for ips), a key twice, a fractional value for
// a long key; and, beyond Kafka, which stores them, a value that is not a
// positive finite number (a rate of zero would mute its client for ever).
// An entity named in two entries is INVALID_REQUEST for both. An entry
// with an error has none of its operations applied. The others are one
// record of the metadata log, committed by the active controller (a
// broker that is not forwards the request to it, atController, as Kafka
// 4's brokers do), applied by every broker, and kept in log.dirs by a
// broker alone (durable.go), as its SCRAM credentials are; validate_only
// checks without committing. A response entry per request entry, naming
// its entity as asked.
//
// Enforced (quotas.go, request_quota.go, mutation_quota.go, package
// quota): producer_byte_rate on Produce requests' bytes,
// consumer_byte_rate on Fetch responses' records, request_percentage on
// the time requests take, and controller_mutation_rate (KIP-599) on the
// partitions CreateTopics, CreatePartitions and DeleteTopics create and
// delete, per user and client id with Kafka's precedence; and
// connection_creation_rate (KIP-612, connection_quota.go, kafkanet's
// WithConnectionQuotas) on the connections a client IP opens per second,
// its own quota, else the default IP entity's, measured as Kafka measures
// it over the quota windows: a connection over it is accepted, not
// served, and closed after Kafka's throttle time (at most one window),
// counted as a connection_creation_rate refusal. Each applies from the
// next request, or connection, once this broker has applied the record.
//
// Authorization (authz.go): ALTER_CONFIGS on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED for every entry.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.AlterClientQuotas, 0, 1, (*Server).handleAlterClientQuotas) }

func (s *Server) handleAlterClientQuotas(r *kafkanet.Request) {
	if s.atController(r) {
		return
	}
	req := r.Msg.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	alts := make([]metadata.QuotaAlteration, len(req.Entries))
	for i, e := range req.Entries {
		for _, p := range e.Entity {
			alts[i].Parts = append(alts[i].Parts, metadata.QuotaPart{Type: p.Type, Name: p.Name})
		}
		for _, op := range e.Ops {
			alts[i].Ops = append(alts[i].Ops, metadata.QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
	_, errs, err := s.ctrl().AlterQuotas(ctx, alts, req.ValidateOnly)
	cancel()
	for i, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range e.Entity {
			re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
		}
		switch {
		case err != nil:
			re.ErrorCode, re.ErrorMessage = controllerCode(err), errorMessage(err)
		case errs[i] != nil:
			re.ErrorCode, re.ErrorMessage = kerr.InvalidRequest.Code, quotaMessage(errs[i])
		}
		resp.Entries = append(resp.Entries, re)
	}
	r.Respond(resp)
}
