package server

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// The reasons a client is refused, the values of broker_refusals_total's
// reason label. Each refusal is counted; its log line is written at most
// once per client host and reason every refusalLogInterval, so that a
// client hammering the broker cannot flood its log.
const (
	refuseMaxConnections      = "max_connections"        // max.connections reached: the new connection is closed
	refuseMaxConnectionsPerIP = "max_connections_per_ip" // max.connections.per.ip reached: likewise
	refuseAcceptError         = "accept_error"           // accept failed (too many open files...): retried after a backoff
	refuseRequestTooLarge     = "request_too_large"      // a length prefix over socket.request.max.bytes: closed
	refuseSlowRequest         = "slow_request"           // a request stalled mid-frame for socket.read.timeout.ms: closed
	refuseMalformed           = "malformed_request"      // a header or body kmsg cannot decode, an unknown API or version: closed
	refuseInvalidString       = "invalid_string"         // a name or id past Kafka's limits: answered with an error code
	refuseCorruptBatch        = "corrupt_batch"          // CORRUPT_MESSAGE
	refuseInvalidRecord       = "invalid_record"         // INVALID_RECORD
	refuseBatchTooLarge       = "batch_too_large"        // MESSAGE_TOO_LARGE, inflated size included
	refusePartitionLimit      = "partition_limit"        // a topic creation past max.broker.partitions: POLICY_VIOLATION
)

// refusalReasons maps the storage's refusals of a client's data to their
// reasons.
var refusalReasons = []struct {
	err    error
	reason string
}{
	{storage.ErrCorruptBatch, refuseCorruptBatch},
	{storage.ErrInvalidRecord, refuseInvalidRecord},
	{storage.ErrBatchTooLarge, refuseBatchTooLarge},
	{storage.ErrPartitionLimit, refusePartitionLimit},
}

// refuseData counts and logs err, a storage error answered to r's client,
// if it refuses the client's data (see refusalReasons); other errors are
// not refusals.
func (s *Server) refuseData(r *request, err error) {
	for _, m := range refusalReasons {
		if errors.Is(err, m.err) {
			s.refusals.refuse(r.c.remote, m.reason, zap.String("client_id", r.clientID),
				zap.String("api", kmsg.NameForKey(r.kreq.Key())), zap.String("error", truncate(err.Error(), maxErrorMessage)))
			return
		}
	}
}

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

func newRefusals(reg prometheus.Registerer, log *zap.Logger, now func() time.Time) (*refusals, error) {
	r := &refusals{
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "broker_refusals_total",
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
