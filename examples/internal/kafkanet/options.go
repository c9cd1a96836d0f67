package kafkanet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/internal/sasl"
	"github.com/gopurgatory/purgatory/timer"
)

// An Option configures a Server.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is a Server's settings; immutable once New returns.
type config struct {
	log       *zap.Logger
	reg       prometheus.Registerer
	namespace string

	maxConns, maxConnsPerIP int
	maxInFlight             int
	requestMaxBytes         int32
	readTimeout             time.Duration
	idleTimeout             time.Duration
	budget                  int64
	sharePerConn            int64 // 0: derived from budget; < 0: unbounded (see shares)
	sharePerIP              int64 // likewise
	decodeSlots             int

	connContext func(context.Context, *Conn) context.Context
	connClosed  func(*Conn)

	sasl        *sasl.Authenticator // nil: no SASL listener may be opened
	authDelay   time.Duration       // connection.failed.authentication.delay.ms
	reauthAfter time.Duration       // connections.max.reauth.ms; 0: never

	throttleClock timer.Clock // the Throttle purgatory's; nil: the real one

	// connQuotas are the connection_creation_rate quotas (conn_rate.go),
	// measured over connWindows windows of connWindow; nil: none.
	connQuotas  ConnectionQuotas
	connWindows int
	connWindow  time.Duration
}

// The defaults, Kafka's where Kafka has one.
const (
	defaultMaxInFlight     = 100       // queued.max.requests.per.connection
	defaultRequestMaxBytes = 100 << 20 // socket.request.max.bytes
	defaultReadTimeout     = 30 * time.Second
	defaultIdleTimeout     = 10 * time.Minute // connections.max.idle.ms
	defaultAuthDelay       = 100 * time.Millisecond
	minRequestMaxBytes     = 1024
)

func defaultConfig() config {
	return config{
		log:             zap.NewNop(),
		namespace:       "kafka",
		maxConns:        math.MaxInt,
		maxConnsPerIP:   math.MaxInt,
		maxInFlight:     defaultMaxInFlight,
		requestMaxBytes: defaultRequestMaxBytes,
		readTimeout:     defaultReadTimeout,
		idleTimeout:     defaultIdleTimeout,
		budget:          -1,
		authDelay:       defaultAuthDelay,
		decodeSlots:     runtime.GOMAXPROCS(0),
	}
}

var namespacePattern = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func (c *config) validate() error {
	switch {
	case !namespacePattern.MatchString(c.namespace):
		return fmt.Errorf("kafkanet: metrics namespace %q is not a metric name", c.namespace)
	case c.maxConns < 0 || c.maxConnsPerIP < 0:
		return errors.New("kafkanet: connection limits must not be negative")
	case c.maxInFlight < 1:
		return fmt.Errorf("kafkanet: queued.max.requests.per.connection: %d, must be at least 1", c.maxInFlight)
	case c.requestMaxBytes < minRequestMaxBytes:
		return fmt.Errorf("kafkanet: socket.request.max.bytes: %d, must be at least %d", c.requestMaxBytes, minRequestMaxBytes)
	case c.readTimeout <= 0:
		return errors.New("kafkanet: socket.read.timeout.ms must be positive")
	case c.authDelay < 0 || c.reauthAfter < 0:
		return errors.New("kafkanet: connection.failed.authentication.delay.ms and connections.max.reauth.ms must not be negative")
	case (c.sharePerConn > 0 && c.sharePerConn < minRequestMaxBytes) || (c.sharePerIP > 0 && c.sharePerIP < minRequestMaxBytes):
		return fmt.Errorf("kafkanet: queued.max.request.bytes.per.connection and .per.ip: %d and %d, must be at least %d, or 0 (derived), or negative (unbounded)",
			c.sharePerConn, c.sharePerIP, minRequestMaxBytes)
	case c.decodeSlots < 1:
		return fmt.Errorf("kafkanet: %d decode slots, must be at least 1", c.decodeSlots)
	case c.connQuotas != nil && (c.connWindows < 1 || c.connWindow <= 0):
		return fmt.Errorf("kafkanet: connection quotas over %d windows of %v: must be at least one window, of a positive span",
			c.connWindows, c.connWindow)
	}
	return nil
}

// WithLogger logs connections closed on errors, refusals and handler
// panics to l. Nothing is logged by default.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.log = l
		}
	})
}

// WithRegisterer registers the server's metrics on r, named with the
// namespace (WithNamespace). None are registered by default.
func WithRegisterer(r prometheus.Registerer) Option {
	return optionFunc(func(c *config) { c.reg = r })
}

// WithNamespace prefixes the metrics' names: "broker" gives
// broker_connections, broker_refusals_total... The default is "kafka".
func WithNamespace(ns string) Option { return optionFunc(func(c *config) { c.namespace = ns }) }

// WithMaxConnections bounds the connections open at once (Kafka's
// max.connections) and those from one client host
// (max.connections.per.ip): a connection past either is closed as soon as
// it is accepted, and counted. Both are unbounded by default.
func WithMaxConnections(total, perIP int) Option {
	return optionFunc(func(c *config) { c.maxConns, c.maxConnsPerIP = total, perIP })
}

// WithMaxInFlight bounds the requests a connection reads ahead of their
// answers (queued.max.requests.per.connection, 100 by default): past it,
// the reader waits for the writer.
func WithMaxInFlight(n int) Option { return optionFunc(func(c *config) { c.maxInFlight = n }) }

// WithRequestMaxBytes bounds a request's size (socket.request.max.bytes,
// 100 MiB by default): a larger length prefix closes the connection before
// its body is read.
func WithRequestMaxBytes(n int32) Option {
	return optionFunc(func(c *config) { c.requestMaxBytes = n })
}

// WithReadTimeout is the deadline of a request's arrival
// (socket.read.timeout.ms, 30s by default; Kafka has none): once its
// first byte is read, a request must arrive whole within d, however
// steadily its bytes come, or its connection is closed, counted and logged
// (a slow_request refusal). The time the server itself spends not reading
// (waiting for memory, or for its client host's share of it) does not
// count. So d bounds how long a request half sent holds its memory; it
// also sets the slowest link a request of the largest size can come over:
// at 30s, socket.request.max.bytes of 100 MiB needs about 3.5 MB/s, a
// request of 1 MiB (a producer's default max.request.size) 35 KB/s.
func WithReadTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.readTimeout = d })
}

// WithIdleTimeout closes a connection that owes nothing and sends nothing
// for d (connections.max.idle.ms, 10 minutes by default); 0 or less never
// does.
func WithIdleTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.idleTimeout = d })
}

// WithMemoryBudget bounds the bytes held for clients
// (queued.max.request.bytes): the bodies of requests being read or
// handled, and what answers hold until written (Request.Room). 0 or less,
// the default, is unbounded (bytes are still counted).
func WithMemoryBudget(n int64) Option { return optionFunc(func(c *config) { c.budget = n }) }

// WithMemoryShares bounds the bytes of request bodies being read (their
// size read, not all of their bytes yet) that one connection may hold
// (queued.max.request.bytes.per.connection) and the connections from one
// client host together (queued.max.request.bytes.per.ip), so that no
// client, sending its requests slowly, can take the memory budget
// (WithMemoryBudget) from the others. A body counts at its declared size
// from its size on, without a buffer of that size (see the package
// documentation, # Memory). A request larger than either share is refused
// as soon as its size is read: its connection is closed, counted and
// logged (a request_over_share refusal), as one past
// socket.request.max.bytes is. A request within them that its host's
// other requests being read leave no room for waits, before its body is
// read, until they arrive (or their connections close).
//
// 0, the default, derives a share from the budget: a connection a quarter
// of it, a host half of it (at least 1 KiB each), so that one host leaves
// half the budget to the others; with no budget, no share. A negative
// share is unbounded; a positive one must be at least 1 KiB. A connection
// reads one request at a time, so its share is a bound on its requests'
// size, below socket.request.max.bytes.
func WithMemoryShares(perConnection, perIP int64) Option {
	return optionFunc(func(c *config) { c.sharePerConn, c.sharePerIP = perConnection, perIP })
}

// shares returns the shares of WithMemoryShares, derived and in bytes,
// math.MaxInt64 for unbounded.
func (c *config) shares() (perConn, perIP int64) {
	share := func(set, fraction int64) int64 {
		switch {
		case set > 0:
			return set
		case set < 0 || c.budget <= 0:
			return math.MaxInt64
		}
		return max(c.budget/fraction, minRequestMaxBytes)
	}
	return share(c.sharePerConn, 4), share(c.sharePerIP, 2)
}

// WithDecodeSlots bounds the request bodies decoded at once, GOMAXPROCS by
// default (see the package documentation, # Decoding).
func WithDecodeSlots(n int) Option { return optionFunc(func(c *config) { c.decodeSlots = n }) }

// WithConnContext derives each connection's context, as net/http's
// Server.ConnContext does: f is called when the connection is accepted,
// with the context its requests' operations wait under (Request.Context),
// and what it returns replaces it. f must return a context derived from
// the one it is given, so that it is cancelled when the connection closes.
func WithConnContext(f func(ctx context.Context, c *Conn) context.Context) Option {
	return optionFunc(func(c *config) { c.connContext = f })
}

// WithConnClosed calls f once each connection has closed: its socket
// closed, its context cancelled (which answers the operations waiting on
// its behalf), its reader and writer gone. It runs on the connection's
// goroutine, before Drain returns.
func WithConnClosed(f func(*Conn)) Option { return optionFunc(func(c *config) { c.connClosed = f }) }

// WithSASL authenticates the connections of SASL_PLAINTEXT and SASL_SSL
// listeners with a's mechanisms (sasl.enabled.mechanisms) before they may
// send anything but ApiVersions (see sasl_gate.go). A failed
// authentication is answered failDelay later, then the connection is
// closed (connection.failed.authentication.delay.ms, Kafka's 100ms by
// default: a client cannot hammer credentials faster); a session lasts
// reauth (connections.max.reauth.ms, KIP-368; 0, Kafka's default: for
// ever), after which the client must authenticate again on the same
// connection or have it closed.
func WithSASL(a *sasl.Authenticator, failDelay, reauth time.Duration) Option {
	return optionFunc(func(c *config) { c.sasl, c.authDelay, c.reauthAfter = a, failDelay, reauth })
}

// WithThrottleClock sets the clock the throttles' mutes end on
// (Request.Throttle): a *timer.ManualClock makes them deterministic in
// tests. The real clock by default.
func WithThrottleClock(clk timer.Clock) Option {
	return optionFunc(func(c *config) { c.throttleClock = clk })
}

// WithConnectionQuotas enforces q's connection_creation_rate quotas
// (KIP-612): each client IP's connections per second, measured as Kafka
// measures them over windows windows of window (quota.window.num and
// quota.window.size.seconds, 11 of 1s in Kafka), against the IP's own
// quota, else the default IP entity's, else none. A connection that takes
// its IP over is accepted, not served, and closed after its throttle time
// (at most one window) on the throttle clock (WithThrottleClock), counted
// and logged as a connection_creation_rate refusal; see conn_rate.go. q is
// asked at every connection, so that a quota altered applies to the next
// one. None by default.
func WithConnectionQuotas(q ConnectionQuotas, windows int, window time.Duration) Option {
	return optionFunc(func(c *config) { c.connQuotas, c.connWindows, c.connWindow = q, windows, window })
}
