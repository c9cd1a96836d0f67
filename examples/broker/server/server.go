package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/metalog"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
	"github.com/gopurgatory/purgatory/purgatory"
)

// tp names a topic-partition: the key fetches and produces wait under.
type tp struct {
	topic     string
	partition int32
}

// Server is a Kafka-protocol broker whose every wait is an operation in a
// purgatory: a long-poll fetch, an acks=all produce, a group join, a
// member's session.
type Server struct {
	cfg Config // immutable after New
	log *zap.Logger
	reg *prometheus.Registry

	fetches  *purgatory.Purgatory[tp] // Kafka's "Fetch" purgatory
	produces *purgatory.Purgatory[tp] // Kafka's "Produce" purgatory
	data     *data                    // topics, logs, producer ids (data.go)
	durable  *durable                 // log.dirs, or nil: in memory (durable.go)

	files fdPlan // the file-descriptor budget (limits.go); immutable

	// net is the network layer (package kafkanet): the connections, their
	// limits and budgets, refusals counted in broker_refusals_total.
	net  *kafkanet.Server
	ln   *kafkanet.Listener
	host string // advertised host and port
	port int32

	cl      *cluster         // the brokers, this one among them; immutable
	leaders *replica.Leaders // followers' state of the partitions this broker leads
	peers   *peers           // the other brokers; nil for a broker alone

	// meta is the cluster's metadata log, which every broker applies
	// (image.go); ctrl the controller, active while this broker leads the
	// quorum. ctrlReady is set once both are open: the log's leadership
	// callback waits for it.
	meta      *metalog.Log
	ctrl      *controller.Controller
	ctrlReady atomic.Bool

	// groups is the group coordinator (package group), with its
	// "Rebalance", "Heartbeat" and "OffsetExpiration" purgatories.
	groups *group.Coordinator
	// gparts is the offsets partitions this broker leads, whose groups
	// it coordinates (group_partitions.go).
	gparts *groupPartitions
	// compactor bounds the offsets partitions this broker leads
	// (offsets_compaction.go).
	compactor *offsetsCompactor
	// topicExists reports whether a partition exists, for OffsetCommit's
	// UNKNOWN_TOPIC_OR_PARTITION. Nil accepts every partition: topics are
	// the data path's; wire its registry here (see coordinator.go).
	topicExists func(topic string, partition int32) bool

	closed atomic.Bool // Close has begun
}

// New returns a broker listening on cfg's listener; Serve starts it.
func New(cfg Config, log *zap.Logger) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	// The file budget first: the log dir's cache of open segments is
	// sized by it, and a log dir too large for the limit is refused
	// before anything is opened but its lock.
	limit, err := kafkanet.RaiseFileLimit()
	if err != nil {
		log.Warn("cannot read RLIMIT_NOFILE; counting with the largest", zap.Error(err))
		limit = kafkanet.MaxFileLimit
	}
	peers := 0
	if cfg.Cluster != "" {
		cl, _ := parseCluster(cfg.Cluster, cfg.ControllerQuorumVoters, cfg.NodeID) // validate parsed it already
		peers = cl.size() - 1
	}
	if s.files, err = planFiles(cfg, limit, peers, 0); err != nil {
		return nil, err
	}
	popts := func(purge int) []purgatory.Option {
		return []purgatory.Option{purgatory.WithLogger(log), purgatory.WithRegisterer(s.reg), purgatory.WithPurgeInterval(purge)}
	}
	if s.fetches, err = purgatory.New[tp]("Fetch", popts(cfg.FetchPurgeInterval)...); err != nil {
		return nil, err
	}
	if s.produces, err = purgatory.New[tp]("Produce", popts(cfg.ProducePurgeInterval)...); err != nil {
		_ = s.fetches.Close()
		return nil, err
	}
	// The log dir first: its lock keeps out a second broker before
	// anything is read, and the coordinator restores its offsets from it.
	if s.durable, err = openDurable(cfg, log, s.files.openSealed); err != nil {
		s.closePurgatories()
		return nil, err
	}
	if s.durable != nil {
		existing, err := s.durable.partitions()
		if err == nil {
			s.files, err = planFiles(cfg, limit, peers, existing)
		}
		if err != nil {
			s.closePurgatories()
			_ = s.durable.close()
			return nil, err
		}
	}
	s.files.log(log, cfg)
	if s.net, err = kafkanet.New(handler{s}, kafkanet.WithLogger(log), kafkanet.WithRegisterer(s.reg),
		kafkanet.WithNamespace("broker"),
		kafkanet.WithMaxConnections(s.files.maxConnections, cfg.MaxConnectionsPerIP),
		kafkanet.WithMaxInFlight(cfg.MaxInFlightPerConn), kafkanet.WithRequestMaxBytes(cfg.SocketRequestMaxBytes),
		kafkanet.WithReadTimeout(cfg.SocketReadTimeout), kafkanet.WithIdleTimeout(cfg.ConnectionsMaxIdle),
		kafkanet.WithMemoryBudget(cfg.QueuedMaxRequestBytes)); err != nil {
		s.closePurgatories()
		_ = s.durable.close()
		return nil, err
	}
	s.gparts = newGroupPartitions(s)
	s.compactor = newOffsetsCompactor(s)
	if s.groups, err = newCoordinator(cfg, log, s.reg, groupStore{s}, s.gparts.owns); err != nil {
		s.closePurgatories()
		_ = s.durable.close()
		return nil, err
	}
	if cfg.Cluster != "" {
		// validate parsed it already.
		s.cl, _ = parseCluster(cfg.Cluster, cfg.ControllerQuorumVoters, cfg.NodeID)
		self, _ := s.cl.node(cfg.NodeID)
		if cfg.Listener == Default().Listener {
			cfg.Listener = self.addr() // its --cluster entry, unless told otherwise
		}
		if cfg.AdvertisedListener == "" {
			cfg.AdvertisedListener = self.addr()
		}
		s.cfg = cfg
	}
	if s.ln, err = s.net.Listen(cfg.Listener, cfg.AdvertisedListener); err != nil {
		s.closePurgatories()
		_ = s.durable.close()
		return nil, err
	}
	s.host, s.port = s.ln.Advertised()
	if s.cl == nil {
		s.cl = single(node{id: cfg.NodeID, host: s.host, port: s.port})
	}
	s.leaders = replica.NewLeaders(cfg.NodeID, leaderEnv{s}, cfg.ReplicaLagTimeMax, time.Now)
	if s.data, err = newData(cfg, log, s.durable, s.files.maxPartitions); err != nil {
		_ = s.ln.Close()
		s.closePurgatories()
		_ = s.durable.close()
		return nil, err
	}
	if s.cl.size() > 1 {
		if s.peers, err = newPeers(s); err != nil {
			_ = s.ln.Close()
			s.closePurgatories()
			_ = errors.Join(s.data.close(), s.durable.close())
			return nil, err
		}
	}
	// The metadata log last: applying it creates topics in the store and
	// wakes the purgatories, and its leadership callback reaches the
	// peers.
	if err = s.openMetadata(); err != nil {
		if s.peers != nil {
			s.peers.close()
		}
		_ = s.ln.Close()
		s.closePurgatories()
		_ = errors.Join(s.data.close(), s.durable.close())
		return nil, err
	}
	if s.peers != nil {
		s.peers.start()
	}
	// Offset commits name partitions that must exist, as Kafka checks its
	// metadata cache: the metadata log's image.
	s.topicExists = func(topic string, partition int32) bool {
		t, err := s.image().Topic(topic)
		return err == nil && partition >= 0 && int(partition) < len(t.Partitions)
	}
	return s, nil
}

// Addr returns the address the broker listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Registry returns the registry holding the broker's and its purgatories'
// metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// MetricsHandler serves the registry's metrics (/metrics).
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg})
}

// Serve accepts connections until Close. It returns nil after Close.
func (s *Server) Serve() error {
	if !s.closed.Load() {
		s.log.Info("broker serving", zap.Stringer("listener", s.ln.Addr()),
			zap.String("advertised", s.ln.AdvertisedAddr()), zap.Int32("node_id", s.cfg.NodeID))
	}
	return s.net.Serve(s.ln)
}

// Close shuts the broker down gracefully and waits for its goroutines:
//
//  1. stop accepting connections; in a cluster, a controlled shutdown
//     (controlled.shutdown.enable): the controller moves this broker's
//     leaderships away while it still serves the connections it has
//     (heartbeat.go); stop the peers' goroutines, the
//     controller and the broker's member of the metadata quorum;
//  2. answer every waiting request: closing the purgatories completes each
//     operation (a fetch with what it has, a produce with the error Kafka
//     gives a request cut short);
//  3. let each connection write what it owes, up to ctx's deadline, then
//     close it;
//  4. close the logs, which answers no longer read, fsyncing what they
//     hold with log.dirs; then the log dir, whose
//     lock the next broker on it takes.
func (s *Server) Close(ctx context.Context) error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	err := s.net.Close() // and the listener
	if s.peers != nil && s.cfg.ControlledShutdown {
		// Still serving the connections it has, but accepting no new
		// one (a client dialing now is refused, which it retries,
		// rather than cut off in the middle of its first request):
		// clients follow the leaderships as they move.
		s.peers.controlledShutdown(ctx)
	}
	if s.peers != nil {
		s.peers.close() // no more replica fetches, heartbeats or ISR checks
	}
	// The controller, then the metadata log: nothing is applied to the
	// store past this point.
	err = errors.Join(err, s.ctrl.Close(), s.meta.Close())
	s.gparts.wait() // the offsets partitions being loaded
	s.closePurgatories()
	s.net.Drain(ctx)
	err = errors.Join(err, s.data.close(), s.durable.close())
	s.log.Info("broker closed")
	return err
}

func (s *Server) closePurgatories() {
	if s.groups != nil {
		_ = s.groups.Close() // its purgatories: waiting JoinGroups get NOT_COORDINATOR
	}
	_ = s.produces.Close()
	_ = s.fetches.Close()
}
