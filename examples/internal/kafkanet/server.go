package kafkanet

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// A Handler is what a server built on the package gives it: the dispatch
// of its requests, as net/http's Handler.
type Handler interface {
	// Supports reports whether version of API key is served. A request
	// of another version closes its connection, as Kafka closes it,
	// except an ApiVersions, which is read as v0 and handed to
	// ServeKafka with its ClientVersion, to be answered
	// UNSUPPORTED_VERSION with the versions served.
	Supports(key, version int16) bool
	// ServeKafka handles r on its connection's reader goroutine, which
	// reads no further request meanwhile: it must not block. It answers
	// r exactly once, at once or later from any goroutine (Respond,
	// RespondHolding, NoResponse, HangUp). A panic is a bug: it is
	// logged with its stack and counted, and r's connection is closed.
	ServeKafka(r *Request)
}

// Server serves the Kafka protocol's connections for a Handler: it
// accepts them within its limits, reads and decodes their requests within
// its budgets, and writes the answers in request order. See the package
// documentation.
type Server struct {
	cfg     config // immutable after New
	handler Handler
	log     *zap.Logger

	metrics *metrics
	mem     *memBudget // queued.max.request.bytes (budget.go)
	// shares bounds each host's requests being read
	// (queued.max.request.bytes.per.ip, share.go); connShare is what one
	// connection's may be (.per.connection), math.MaxInt64 for unbounded.
	shares    *hostShares
	connShare int64
	refusals  *refusals // counts and logs what is refused (refusals.go)
	// connRates measures the connection creation rate of the IPs a
	// connection_creation_rate quota applies to (conn_rate.go); nil
	// without WithConnectionQuotas.
	connRates *connRates
	// decodeSlots bounds the request bodies decoded at once (decode.go);
	// decodesWaiting counts the readers waiting for one.
	decodeSlots    chan struct{}
	decodesWaiting atomic.Int64

	mu        sync.Mutex // guards the following
	listeners map[net.Listener]struct{}
	conns     map[*Conn]struct{}
	perIP     map[string]int // open connections by client host
	closed    bool

	closing chan struct{}  // closed by Close: the accept loops stop waiting
	wg      sync.WaitGroup // the accept loops and the connections

	// authDelays holds the answers to failed authentications for
	// connection.failed.authentication.delay.ms, each under its
	// connection (sasl_gate.go); nil without SASL. Closed by Drain.
	authDelays *purgatory.Purgatory[*Conn]

	// throttles ends the quotas' mutes (throttle.go), each under its
	// connection: made at the first, guarded by mu, closed by Drain.
	throttles       *purgatory.Purgatory[*Conn]
	throttlesClosed bool
}

// New returns a server of h's requests; Serve starts it on a listener.
func New(h Handler, opts ...Option) (*Server, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	reg := cfg.reg
	if reg == nil {
		reg = prometheus.NewRegistry() // counted, and seen by nobody
	}
	connShare, hostShare := cfg.shares()
	s := &Server{cfg: cfg, handler: h, log: cfg.log, listeners: make(map[net.Listener]struct{}), conns: make(map[*Conn]struct{}), perIP: make(map[string]int),
		closing: make(chan struct{}), mem: newMemBudget(cfg.budget), shares: newHostShares(hostShare), connShare: connShare,
		decodeSlots: make(chan struct{}, cfg.decodeSlots)}
	var err error
	if s.metrics, err = newMetrics(reg, cfg.namespace); err != nil {
		return nil, err
	}
	if s.refusals, err = newRefusals(reg, cfg.namespace, s.log, time.Now); err != nil {
		return nil, err
	}
	if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: cfg.namespace + "_queued_bytes",
		Help: "Bytes of requests being read or answered and of answers' records being written, which queued.max.request.bytes bounds.",
	}, func() float64 { return float64(s.mem.inUse()) })); err != nil {
		return nil, err
	}
	if cfg.connQuotas != nil {
		clk := cfg.throttleClock
		if clk == nil {
			clk = timer.NewRealClock()
		}
		s.connRates = newConnRates(cfg.connQuotas, cfg.connWindows, cfg.connWindow, clk)
	}
	if err := s.registerReadersWaiting(reg); err != nil {
		return nil, err
	}
	if cfg.sasl != nil {
		if s.authDelays, err = purgatory.New[*Conn]("AuthenticationFailure", purgatory.WithLogger(s.log),
			purgatory.WithRegisterer(reg)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Serve accepts connections on ln (one of Listen's, or any other) until
// Close, which closes ln; it returns nil then. A Close that came first
// makes it close ln and return at once. Accept errors are retried
// (accept.go).
func (s *Server) Serve(ln net.Listener) error {
	// Add under mu, after the closed check, so that it never races
	// Drain's Wait.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.listeners[ln] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	return s.acceptLoop(ln)
}

// Close stops accepting connections: it closes the listeners Listen
// opened and those Serve accepts on, and a Serve backing off after an
// accept error returns. The
// connections open go on being served until Drain. Its error is a
// listener's failing to close. Idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	lns := make([]net.Listener, 0, len(s.listeners))
	for ln := range s.listeners {
		lns = append(lns, ln)
	}
	s.mu.Unlock()
	var err error
	for _, ln := range lns {
		if e := ln.Close(); e != nil && !errors.Is(e, net.ErrClosed) {
			err = errors.Join(err, e)
		}
	}
	return err
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Drain closes the server (Close), stops every connection's reader and
// waits until each has written every answer it owes, or ctx ends, when it
// closes their sockets under their writers; then it waits for the accept
// loops and the connections' goroutines. The answers still owed must come:
// the caller answers what waits (closing its purgatories) before, or while,
// it drains.
func (s *Server) Drain(ctx context.Context) {
	_ = s.Close()
	s.mu.Lock()
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	// Every reader stops first, then each connection is waited for: no
	// connection reads on while another drains.
	for _, c := range conns {
		c.stopForDrain()
	}
	for _, c := range conns {
		c.awaitDrained(ctx)
	}
	s.wg.Wait()
	if s.authDelays != nil {
		_ = s.authDelays.Close() // nothing waits in it: every connection is gone
	}
	s.closeThrottles() // likewise
}

// Conns returns the number of connections open.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// QueuedBytes returns the bytes held of the memory budget: requests being
// read or handled, answers' records not yet written.
func (s *Server) QueuedBytes() int64 { return s.mem.inUse() }
