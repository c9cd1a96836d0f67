package server

// DescribeClientQuotas: v0-v1 (KIP-546).
//
// Describes the client quotas of this broker's metadata image, as Kafka's
// brokers describe theirs (ClientQuotasImage.describe): the entities the
// filter's components select (each a type, user, client-id or ip, with
// a match type: EXACT a name, DEFAULT the default, SPECIFIED any name or
// the default), an entity matching when it has a part of every
// component's type that matches, and, with strict, no other part; no
// component selects every entity, or none when strict. Each entity comes
// with all of its quotas (producer_byte_rate, consumer_byte_rate,
// request_percentage, controller_mutation_rate, connection_creation_rate),
// in entity order; the broker enforces them all (see AlterClientQuotas).
// A filter naming a type twice, an empty type, a match string for
// DEFAULT or SPECIFIED, none for EXACT, an unknown match type, or ip
// beside user or client-id is INVALID_REQUEST; an unknown type
// UNSUPPORTED_VERSION, as in Kafka; the error is top-level, with its
// message, and no entries. Served by every broker: an AlterClientQuotas
// committed is seen here once this broker has applied its record.
//
// Authorization (authz.go): DESCRIBE_CONFIGS on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED (top level).

import (
	"errors"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.DescribeClientQuotas, 0, 1, (*Server).handleDescribeClientQuotas) }

func (s *Server) handleDescribeClientQuotas(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	filters := make([]metadata.QuotaFilter, len(req.Components))
	for i, c := range req.Components {
		filters[i] = metadata.QuotaFilter{Type: c.EntityType, MatchType: int8(c.MatchType), Match: c.Match}
	}
	entries, err := s.image().DescribeQuotas(filters, req.Strict)
	if err != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		if errors.Is(err, metadata.ErrUnsupportedQuotaEntity) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
		}
		resp.ErrorMessage = quotaMessage(err)
		r.Respond(resp)
		return
	}
	resp.Entries = make([]kmsg.DescribeClientQuotasResponseEntry, 0, len(entries))
	for _, e := range entries {
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.Entity.Parts() {
			re.Entity = append(re.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
		}
		for _, k := range slices.Sorted(maps.Keys(e.Values)) {
			re.Values = append(re.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: e.Values[k]})
		}
		resp.Entries = append(resp.Entries, re)
	}
	r.Respond(resp)
}
