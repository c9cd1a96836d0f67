package server

// Client quotas' enforcement (package quota, Kafka's ClientQuotaManager
// and KafkaApis' throttling): producer_byte_rate bounds the bytes of a
// client's Produce requests, consumer_byte_rate the records of its Fetch
// responses, per user and client id with Kafka's precedence
// (metadata.Image.ClientQuota). A request is recorded when it is
// answered, as Kafka records it in its response callback; one that takes
// its client over the quota is answered at once with throttle_time_ms,
// and its connection is muted for that time (kafkanet's Request.Throttle,
// KIP-219): a delayed operation ends the mute, no goroutine sleeps.
//
// As in Kafka: a throttled Fetch is answered empty (its records are not
// sent, and not counted), a fetch's max_bytes is capped at what the quota
// allows over its windows, a follower's fetch is exempt, and an acks=0
// produce, which gets no answer, is muted all the same.

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// quotas are the broker's quota managers, one per type enforced.
type quotas struct {
	produce, fetch, request *quota.Manager
	mutation                *quota.Manager // controller_mutation_rate (mutation_quota.go)
	// now is the clock a request's time is measured by (request_quota.go):
	// time.Now, but in tests.
	now func() time.Time
}

func newQuotas(cfg Config, s *Server) (quotas, error) {
	opts := []quota.Option{quota.WithWindows(cfg.QuotaWindowNum, cfg.QuotaWindowSize), quota.WithRegisterer(s.reg, "broker")}
	produce, err := quota.New(quota.Produce, opts...)
	if err != nil {
		return quotas{}, err
	}
	fetch, err := quota.New(quota.Fetch, opts...)
	if err != nil {
		return quotas{}, err
	}
	request, err := quota.New(quota.Request, opts...)
	if err != nil {
		return quotas{}, err
	}
	mutation, err := quota.New(quota.Mutation, opts...)
	if err != nil {
		return quotas{}, err
	}
	return quotas{produce: produce, fetch: fetch, request: request, mutation: mutation, now: time.Now}, nil
}

// quotaUser is the user a principal's quotas are set on: its name,
// without its type (Kafka's KafkaPrincipal.getName): alice for
// User:alice, ANONYMOUS for User:ANONYMOUS.
func quotaUser(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// throttled is a request whose answer a quota bounds: its answer is
// recorded under q first (throttle.go's record), and carries the throttle
// time its client earned. A replica.Responder, so that a produce's and a
// fetch's delayed answers go through it too.
type throttled struct {
	*kafkanet.Request
	m *quota.Manager
	q metadata.ClientQuota
}

// answerer is how a handler answers a request: the request itself
// (kafkanet.Request), or through a quota (throttled).
type answerer interface {
	replica.Responder
	NoResponse()
	HangUp()
}

// withQuota returns r as its handler should answer it: through the quota
// of m's type that applies to r's client, or r itself when none does (no
// cost but the lookup).
func (s *Server) withQuota(r *kafkanet.Request, m *quota.Manager) answerer {
	q, ok := m.Quota(s.image(), quotaUser(r.Principal()), r.ClientID)
	if !ok {
		return r
	}
	return &throttled{Request: r, m: m, q: q}
}

// Respond records a produce's request bytes, sets the response's
// throttle time and mutes the connection for it when over, then answers.
func (t *throttled) Respond(resp kmsg.Response) {
	if p, ok := resp.(*kmsg.ProduceResponse); ok {
		d := t.m.Record(t.q, float64(t.BodySize))
		p.ThrottleMillis = throttleMillis(d)
		t.Request.Respond(resp)
		t.Throttle(d)
		return
	}
	t.Request.Respond(resp)
}

// NoResponse records an acks=0 produce, and mutes the connection when
// over: there is no answer to carry the throttle time.
func (t *throttled) NoResponse() {
	d := t.m.Record(t.q, float64(t.BodySize))
	t.Request.NoResponse()
	t.Throttle(d)
}

// RespondHolding records a fetch's n bytes of records; over the quota,
// it answers an empty response instead, and takes them back (Kafka's
// unrecordQuotaSensor and getThrottledResponse): the client fetches them
// again once its throttle has passed.
func (t *throttled) RespondHolding(resp kmsg.Response, n int) {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		t.Request.RespondHolding(resp, n)
		return
	}
	d := t.m.Record(t.q, float64(n))
	if d <= 0 {
		t.Request.RespondHolding(resp, n)
		return
	}
	t.m.Unrecord(t.q, float64(n))
	f.Topics, f.ThrottleMillis = nil, throttleMillis(d)
	t.Request.RespondHolding(f, 0)
	t.Throttle(d)
}

// fetchWithQuota returns the responder of a fetch: a client's through
// its consumer_byte_rate quota, if any, with max_bytes capped at what the
// quota allows over its windows (Kafka's getMaxValueInQuotaWindow); a
// follower's as it is.
func (s *Server) fetchWithQuota(r *kafkanet.Request, req *kmsg.FetchRequest) replica.Responder {
	if replicaOf(req) >= 0 {
		return r
	}
	a := s.withQuota(r, s.quotas.fetch)
	if t, ok := a.(*throttled); ok {
		req.MaxBytes = int32(min(float64(req.MaxBytes), max(t.m.MaxInWindow(t.q), 1)))
	}
	return a
}

// quotaMessage is a quota error's message as Kafka words it, without the
// package's prefix.
func quotaMessage(err error) *string {
	msg := err.Error()
	for _, prefix := range []error{metadata.ErrInvalidQuota, metadata.ErrUnsupportedQuotaEntity} {
		msg = strings.TrimPrefix(msg, prefix.Error()+": ")
	}
	return nilIfEmpty(truncate(msg, maxErrorMessage))
}

// throttleMillis is d in whole milliseconds, as throttle_time_ms.
func throttleMillis(d time.Duration) int32 { return int32(d.Milliseconds()) }
