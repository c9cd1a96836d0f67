package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/proxy/tail"
	"github.com/gopurgatory/purgatory/examples/proxy/upstream"
	"github.com/gopurgatory/purgatory/purgatory"
)

// Server is a Kafka proxy: clients see it as their one broker; it forwards
// what it does not serve to the upstream cluster and serves fetches at the
// end of a partition from one shared upstream long poll, through its
// fetch purgatory. See the package documentation.
type Server struct {
	cfg     Config // immutable after New
	log     *zap.Logger
	reg     *prometheus.Registry
	metrics *metrics

	cl      *upstream.Cluster
	tails   *tail.Manager
	fetches *purgatory.Purgatory[tail.TP] // client fetches waiting for a tail

	ln   net.Listener
	host string // advertised
	port int32

	mu     sync.Mutex // guards the following
	conns  map[*conn]struct{}
	closed bool

	wg sync.WaitGroup // the accept loop and the connections
}

// New returns a proxy listening on cfg's listener, in front of cfg's
// upstream; Serve starts it. Nothing is dialled upstream until the first
// metadata refresh, which starts at once.
func New(cfg Config, log *zap.Logger) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry(), conns: make(map[*conn]struct{})}
	var err error
	if s.metrics, err = newMetrics(s.reg); err != nil {
		return nil, err
	}
	s.cl, err = upstream.New(upstream.WithSeeds(cfg.seeds()...), upstream.WithClientID(cfg.ClientID),
		upstream.WithRequestTimeout(cfg.RequestTimeout), upstream.WithMetadataMaxAge(cfg.MetadataMaxAge),
		upstream.WithReconnectBackoff(cfg.ReconnectBackoff, cfg.ReconnectBackoffMax),
		upstream.WithLogger(log.Named("upstream")), upstream.WithRegisterer(s.reg))
	if err != nil {
		return nil, err
	}
	s.fetches, err = purgatory.New[tail.TP]("Fetch", purgatory.WithLogger(log), purgatory.WithRegisterer(s.reg))
	if err != nil {
		s.cl.Close()
		return nil, err
	}
	// A tail's append (or its end) is the event its waiting fetches are
	// checked on: Kafka's DelayedFetch checked after each append.
	s.tails, err = tail.New(s.cl, func(tp tail.TP) { s.fetches.CheckAndComplete(tp) },
		tail.WithFetch(cfg.TailFetchMaxWait, cfg.TailFetchMaxBytes, cfg.TailFetchPartitionMax),
		tail.WithIdle(cfg.TailIdle), tail.WithCacheBytes(cfg.CacheBytesPerPartition),
		tail.WithLogger(log.Named("tail")), tail.WithRegisterer(s.reg))
	if err != nil {
		_ = s.fetches.Close()
		s.cl.Close()
		return nil, err
	}
	if s.ln, err = net.Listen("tcp", cfg.Listener); err != nil {
		s.closeBackends()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listener, err)
	}
	adv := cfg.AdvertisedListener
	if adv == "" {
		adv = s.ln.Addr().String()
	}
	host, port, err := net.SplitHostPort(adv)
	if err == nil {
		var p int
		p, err = strconv.Atoi(port)
		s.host, s.port = host, int32(p)
	}
	if err != nil {
		_ = s.ln.Close()
		s.closeBackends()
		return nil, fmt.Errorf("advertised.listeners %q: %w", adv, err)
	}
	return s, nil
}

// Addr returns the address the proxy listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Registry returns the registry of the proxy's metrics, its purgatory's,
// its tails' and its upstream side's.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// MetricsHandler serves the registry (/metrics).
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg})
}

// Stats is a snapshot of the proxy's state, for tests and tools.
type Stats struct {
	Tailed         int   // partitions tailed now
	WaitingFetches int64 // client fetches waiting in the purgatory
	Connections    int   // client connections open
}

// Stats returns the proxy's state now.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	n := len(s.conns)
	s.mu.Unlock()
	return Stats{Tailed: s.tails.Len(), WaitingFetches: s.metrics.waiting.Load(), Connections: n}
}

// Serve accepts connections until Close, then returns nil.
func (s *Server) Serve() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	s.log.Info("proxy serving", zap.Stringer("listener", s.ln.Addr()),
		zap.String("advertised", net.JoinHostPort(s.host, strconv.Itoa(int(s.port)))),
		zap.Int32("node_id", s.cfg.NodeID), zap.String("upstream", s.cfg.Upstream))
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			switch {
			case s.isClosed() || errors.Is(err, net.ErrClosed):
				return nil
			case errors.As(err, &ne) && ne.Timeout():
				continue
			}
			return err
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.metrics.connections.Inc()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			s.metrics.connections.Dec()
		}()
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close shuts the proxy down gracefully and waits for its goroutines:
//
//  1. stop accepting connections, and stop reading from those open;
//  2. close the fetch purgatory: every waiting fetch is answered, with
//     what its partitions' caches hold (or upstream's answer);
//  3. let each connection write what it owes (forwarded requests still in
//     flight upstream are answered as they come back) until ctx ends, then
//     close it, with its upstream connections;
//  4. stop the tails and the upstream metadata loop.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	err := s.ln.Close()
	var drained sync.WaitGroup
	for _, c := range conns {
		drained.Add(1)
		go func() { defer drained.Done(); c.drain(ctx.Done()) }()
	}
	_ = s.fetches.Close()
	drained.Wait()
	s.wg.Wait()
	s.closeBackends()
	s.log.Info("proxy closed")
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// closeBackends closes what New opened behind the listener, last first.
func (s *Server) closeBackends() {
	s.tails.Close()
	_ = s.fetches.Close()
	s.cl.Close()
}
