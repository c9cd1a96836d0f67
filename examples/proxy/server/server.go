package server

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
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
	shares  *shareSessions                // clients' share sessions, upstream (share_sessions.go)
	// sessions are the clients' fetch sessions with the proxy
	// (fetch_sessions.go).
	sessions *fetchSessions

	// acls authorizes each client with the upstream's bindings (acls.go);
	// nil without authorizer.class.name. aclStop and aclDone stop its
	// goroutine and wait for it.
	acls             *aclFollower
	aclStop, aclDone chan struct{}

	// net is the network layer (package kafkanet, shared with the
	// broker): the client connections, their limits and budgets.
	net  *kafkanet.Server
	ln   *kafkanet.Listener
	host string // advertised
	port int32

	closed atomic.Bool // Close has begun
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
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry(), shares: newShareSessions(),
		sessions: newFetchSessions(cfg.FetchSessionSlots, cfg.FetchSessionEviction)}
	var err error
	if s.metrics, err = newMetrics(s.reg); err != nil {
		return nil, err
	}
	for _, c := range s.sessions.collectors() {
		if err := s.reg.Register(c); err != nil {
			return nil, err
		}
	}
	upOpts, err := cfg.upstreamOptions()
	if err != nil {
		return nil, err
	}
	s.cl, err = upstream.New(append(upOpts, upstream.WithSeeds(cfg.seeds()...), upstream.WithClientID(cfg.ClientID),
		upstream.WithRequestTimeout(cfg.RequestTimeout), upstream.WithMetadataMaxAge(cfg.MetadataMaxAge),
		upstream.WithReconnectBackoff(cfg.ReconnectBackoff, cfg.ReconnectBackoffMax),
		upstream.WithLogger(log.Named("upstream")), upstream.WithRegisterer(s.reg))...)
	if err != nil {
		return nil, err
	}
	if err := s.startACLs(); err != nil {
		s.cl.Close()
		return nil, err
	}
	s.fetches, err = purgatory.New[tail.TP]("Fetch", purgatory.WithLogger(log), purgatory.WithRegisterer(s.reg))
	if err != nil {
		s.stopACLs()
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
		s.stopACLs()
		s.cl.Close()
		return nil, err
	}
	spec, secOpts, err := cfg.listenerSecurity(log)
	if err != nil {
		s.closeBackends()
		return nil, err
	}
	s.net, err = kafkanet.New(handler{s}, append(secOpts, kafkanet.WithLogger(log), kafkanet.WithRegisterer(s.reg),
		kafkanet.WithNamespace("proxy"), kafkanet.WithMaxConnections(cfg.maxConnections(), cfg.MaxConnectionsPerIP),
		kafkanet.WithMaxInFlight(cfg.MaxInFlightPerConn), kafkanet.WithRequestMaxBytes(cfg.SocketRequestMaxBytes),
		kafkanet.WithReadTimeout(cfg.SocketReadTimeout), kafkanet.WithIdleTimeout(cfg.ConnectionsMaxIdle),
		kafkanet.WithMemoryBudget(cfg.QueuedMaxRequestBytes),
		kafkanet.WithMemoryShares(cfg.QueuedMaxRequestBytesPerConnection, cfg.QueuedMaxRequestBytesPerIP),
		kafkanet.WithConnContext(s.withSession), kafkanet.WithConnClosed(closeSession))...)
	if err != nil {
		s.closeBackends()
		return nil, err
	}
	if s.ln, err = s.net.ListenWith(spec); err != nil {
		s.closeBackends()
		return nil, err
	}
	s.host, s.port = s.ln.Advertised()
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
	FetchSessions  int   // clients' fetch sessions held
}

// Stats returns the proxy's state now.
func (s *Server) Stats() Stats {
	return Stats{Tailed: s.tails.Len(), WaitingFetches: s.metrics.waiting.Load(), Connections: s.net.Conns(),
		FetchSessions: s.sessions.len()}
}

// Serve accepts connections until Close, then returns nil.
func (s *Server) Serve() error {
	if !s.closed.Load() {
		s.log.Info("proxy serving", zap.Stringer("listener", s.ln.Addr()), zap.String("advertised", s.ln.AdvertisedAddr()),
			zap.Int32("node_id", s.cfg.NodeID), zap.String("upstream", s.cfg.Upstream))
	}
	return s.net.Serve(s.ln)
}

// Close shuts the proxy down gracefully and waits for its goroutines:
//
//  1. stop accepting connections, and stop reading from those open;
//  2. close the fetch purgatory: every waiting fetch is answered, with
//     what its partitions' caches hold (or upstream's answer);
//  3. let each connection write what it owes (forwarded requests still in
//     flight upstream are answered as they come back) until ctx ends, then
//     close it, with its upstream connections;
//  4. stop the tails, the reading of the ACL bindings and the upstream
//     metadata loop.
func (s *Server) Close(ctx context.Context) error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	err := s.net.Close() // and the listener
	drained := make(chan struct{})
	go func() { // 1 and 3: the readers stop at once, the writers go on
		defer close(drained)
		s.net.Drain(ctx)
	}()
	_ = s.fetches.Close() // 2
	<-drained
	s.closeBackends() // 4
	s.log.Info("proxy closed")
	return err
}

// closeBackends closes what New opened behind the listener, last first.
func (s *Server) closeBackends() {
	s.tails.Close()
	_ = s.fetches.Close()
	s.stopACLs()
	s.cl.Close()
}

// startACLs starts reading the upstream's ACL bindings, when
// authorizer.class.name asks for client authorization.
func (s *Server) startACLs() error {
	opts, on, err := authz.Options(s.cfg.Authorizer, s.cfg.SuperUsers, s.cfg.AllowEveryoneIfNoACL)
	if err != nil || !on {
		return err
	}
	if s.acls, err = newACLFollower(opts, s.log.Named("acls")); err != nil {
		return err
	}
	s.aclStop, s.aclDone = make(chan struct{}), make(chan struct{})
	go s.followACLs(s.aclStop, s.aclDone)
	return nil
}

// stopACLs stops reading the bindings and waits for it. Idempotent.
func (s *Server) stopACLs() {
	if s.aclStop == nil {
		return
	}
	select {
	case <-s.aclStop:
	default:
		close(s.aclStop)
	}
	<-s.aclDone
}
