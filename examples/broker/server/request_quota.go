package server

// The request quota: request_percentage (Kafka's ClientRequestQuotaManager)
// bounds the share of the broker's time a client's requests take, in
// percent of one thread. Kafka measures the time its request handler and
// network threads spend on each request; this broker has no thread pool,
// and measures what stands for it: the time from the handler's start to
// the answer, or to the handler's return if the answer comes later (a long
// poll, a join waiting for a rebalance, an acks=all produce), so that a
// wait in a purgatory costs the client nothing, as it costs Kafka's
// threads nothing. The completion that answers a delayed request is not
// counted.
//
// A request is recorded when it is answered (Percent of its time, package
// quota's bucket refilled at the quota); one that takes its client over is
// answered with throttle_time_ms, the larger of this throttle and a byte
// rate quota's for a produce or a fetch, and its connection is muted for
// it (kafkanet's OnAnswer and Throttle: a delayed operation ends the mute,
// no goroutine sleeps). As in Kafka, a follower's fetch and the other
// requests between brokers are exempt, and so is authentication
// (SaslHandshake, SaslAuthenticate), before which a client has no
// principal to be quota'd by.

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// requestMeter measures one request's time for its client's request
// quota.
type requestMeter struct {
	m     *quota.Manager
	q     metadata.ClientQuota
	now   func() time.Time
	start time.Time
	// handled is the handler's time once it has returned (0 before): a
	// later answer is charged that, not the wait.
	handled atomic.Int64
}

// meterRequest starts measuring r for its client's request quota, and
// returns the meter, or nil when r is exempt or no request quota applies
// to its client (then it costs the quota's lookup alone).
func (s *Server) meterRequest(r *kafkanet.Request) *requestMeter {
	if exemptFromRequestQuota(r.Msg) {
		return nil
	}
	q, ok := s.quotas.request.Quota(s.image(), quotaUser(r.Principal()), r.ClientID)
	if !ok {
		return nil
	}
	rm := &requestMeter{m: s.quotas.request, q: q, now: s.quotas.now}
	rm.start = rm.now()
	r.OnAnswer(rm.answer)
	return rm
}

// returned marks the handler's return.
func (rm *requestMeter) returned() {
	rm.handled.Store(max(1, int64(rm.now().Sub(rm.start))))
}

// answer records the request's time when it is answered, sets the
// answer's throttle time if the client is over its quota, and returns how
// long to mute its connection (kafkanet.Request.OnAnswer).
func (rm *requestMeter) answer(resp kmsg.Response) time.Duration {
	took := time.Duration(rm.handled.Load())
	if took == 0 {
		took = rm.now().Sub(rm.start)
	}
	d := rm.m.Record(rm.q, quota.Percent(took))
	if d <= 0 {
		return 0
	}
	if tr, ok := resp.(interface {
		kmsg.ThrottleResponse
		kmsg.SetThrottleResponse
	}); ok {
		if ms, _ := tr.Throttle(); throttleMillis(d) > ms {
			tr.SetThrottle(throttleMillis(d))
		}
	}
	return d
}

// exemptFromRequestQuota reports whether a request is exempt from request
// quotas: a follower's fetch, the requests only brokers send each other,
// and authentication.
func exemptFromRequestQuota(msg kmsg.Request) bool {
	switch kmsg.Key(msg.Key()) {
	case kmsg.Fetch:
		return replicaOf(msg.(*kmsg.FetchRequest)) >= 0
	case kmsg.SASLHandshake, kmsg.SASLAuthenticate, kmsg.WriteTxnMarkers, kmsg.ControlledShutdown,
		kmsg.AlterPartition, kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.UnregisterBroker, kmsg.Envelope:
		return true
	}
	return false
}
