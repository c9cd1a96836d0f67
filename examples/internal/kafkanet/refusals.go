package kafkanet

import (
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// The reasons the server refuses a client, the values of its refusals
// metric's reason label (<namespace>_refusals_total). A Handler counts its
// own with Request.Refuse. Each refusal is counted; its log line is
// written at most once per client host and reason every
// refusalLogInterval, so that a client hammering the server cannot flood
// its log.
const (
	refuseMaxConnections      = "max_connections"          // max.connections reached: the new connection is closed
	refuseMaxConnectionsPerIP = "max_connections_per_ip"   // max.connections.per.ip reached: likewise
	refuseConnectionRate      = "connection_creation_rate" // the IP's connection_creation_rate quota passed: held, unserved, then closed after its throttle (conn_rate.go)
	refuseAcceptError         = "accept_error"             // accept failed (too many open files...): retried after a backoff
	refuseRequestTooLarge     = "request_too_large"        // a length prefix over socket.request.max.bytes: closed
	refuseRequestOverShare    = "request_over_share"       // a length prefix over the connection's or its host's share of the memory budget: closed
	refuseSlowRequest         = "slow_request"             // a request not whole socket.read.timeout.ms after its first byte: closed
	refuseMalformed           = "malformed_request"        // a header or body kmsg cannot decode, an unknown API or version: closed
	refuseTLSHandshake        = "tls_handshake"            // a TLS handshake failed or timed out: closed
	refuseUnauthenticated     = "unauthenticated"          // a request before SASL authentication, or after the session expired: closed

	// A reader that stops reading its socket is not closed: it goes on
	// when memory comes back. Its stop is counted and logged as the
	// refusals are, so that an operator sees why reads stopped.
	refuseMemoryWait    = "memory_wait"     // queued.max.request.bytes spent: the reader waits for bytes to come back
	refuseHostShareWait = "host_share_wait" // the host's other requests being read hold its queued.max.request.bytes.per.ip: the reader waits before the body
)

// refusalLogInterval is how often a refusal is logged per client host and
// reason.
const refusalLogInterval = time.Minute

// refusalLogKeys bounds the refusal log's memory: past it, the oldest half
// is forgotten (and may be logged again sooner).
const refusalLogKeys = 4096

// refusals counts and logs refusals. Safe for concurrent use.
type refusals struct {
	counter *prometheus.CounterVec // by reason
	log     *zap.Logger
	now     func() time.Time

	mu   sync.Mutex // guards the following
	last map[refusalKey]time.Time
}

type refusalKey struct{ host, reason string }

func newRefusals(reg prometheus.Registerer, namespace string, log *zap.Logger, now func() time.Time) (*refusals, error) {
	r := &refusals{
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: namespace + "_refusals_total",
			Help: "Clients, connections, requests and batches refused, by reason.",
		}, []string{"reason"}),
		log: log, now: now, last: make(map[refusalKey]time.Time),
	}
	if err := reg.Register(r.counter); err != nil {
		return nil, err
	}
	return r, nil
}

// refuse counts a refusal of client (nil: unknown) for reason, and logs it
// with fields unless this host was logged for this reason within the
// interval.
func (r *refusals) refuse(client net.Addr, reason string, fields ...zap.Field) {
	r.counter.WithLabelValues(reason).Inc()
	host := ""
	if client != nil {
		host = client.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	if !r.due(refusalKey{host, reason}) {
		return
	}
	r.log.Warn("refused", append([]zap.Field{zap.String("reason", reason), zap.String("client", host)}, fields...)...)
}

// due reports whether k's refusal is to be logged now, and records it.
func (r *refusals) due(k refusalKey) bool {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if at, ok := r.last[k]; ok && now.Sub(at) < refusalLogInterval {
		return false
	}
	if len(r.last) >= refusalLogKeys {
		r.forgetOldestLocked()
	}
	r.last[k] = now
	return true
}

// forgetOldestLocked drops the entries older than the mean age: O(keys),
// once per refusalLogKeys/2 new hosts at worst.
//
// REQUIRES: r.mu held.
func (r *refusals) forgetOldestLocked() {
	var sum time.Duration
	base := r.now()
	for _, at := range r.last {
		sum += base.Sub(at)
	}
	mean := sum / time.Duration(len(r.last))
	for k, at := range r.last {
		if base.Sub(at) >= mean {
			delete(r.last, k)
		}
	}
}
