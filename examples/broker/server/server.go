package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/sharegroup"
	"github.com/gopurgatory/purgatory/examples/broker/sharestate"
	"github.com/gopurgatory/purgatory/examples/broker/txn"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// Server is a Kafka-protocol broker whose every wait is an operation in a
// purgatory: a long-poll fetch, an acks=all produce, a group join, a
// member's session.
type Server struct {
	cfg Config // immutable after New
	log *zap.Logger
	reg *prometheus.Registry

	data    *data    // topics, logs, producer ids (data.go)
	durable *durable // log.dirs, or nil: in memory (durable.go)
	// replicas is the replica manager (package replica): the data path,
	// its Fetch and Produce purgatories, replication.
	replicas *replica.Manager
	// fetchSessions are the clients' fetch sessions (fetch_sessions.go).
	fetchSessions *fetchSessions

	files fdPlan // the file-descriptor budget (limits.go); immutable

	// net is the network layer (package kafkanet): the connections, their
	// limits and budgets, refusals counted in broker_refusals_total.
	net *kafkanet.Server
	// lns are the listeners, ln among them: the one the brokers of a
	// cluster use between them (inter.broker.listener.name), whose
	// advertised address is this broker's in the cluster.
	lns  []*kafkanet.Listener
	ln   *kafkanet.Listener
	host string // ln's advertised host and port
	port int32

	brokers *cluster.Brokers // the brokers, this one among them; immutable
	// member is this broker's membership in its cluster (package
	// cluster): the metadata log it applies, the controller, active
	// while this broker leads the quorum, its peers and heartbeat.
	member *cluster.Member

	// coords is the coordinator runtime (package coordinator), which
	// hosts the group coordinator's state on __consumer_offsets
	// (offsets, package group/service).
	coords  *coordinator.Runtime
	offsets *coordinator.Topic
	// groups is the group coordinator (package group), with its
	// "Rebalance", "Heartbeat" and "OffsetExpiration" purgatories.
	groups *group.Coordinator
	// consumers is the KIP-848 consumer group coordinator (package
	// consumergroup), beside the classic one, on the same routing.
	consumers *consumergroup.Coordinator
	// txns is the transaction coordinator (package txn), hosted on
	// __transaction_state (txnTopic), which routes its requests.
	txns     *txn.Coordinator
	txnTopic *coordinator.Topic
	// shareStates is the share coordinator (package sharestate), hosted
	// on __share_group_state (shareStateTopic), which routes its RPCs.
	shareStates     *sharestate.Coordinator
	shareStateTopic *coordinator.Topic
	// share is the broker's share groups (share.go): their membership,
	// share partitions, sessions and "ShareFetch" purgatory.
	share *shareBroker
	// groupTypes keeps one group id one group type across the three
	// coordinators above (group_types.go).
	groupTypes groupTypes
	// authz is the authorizer (authz.go), nil without
	// authorizer.class.name: its bindings follow the metadata log's.
	authz *acl.Authorizer
	// topicExists reports whether a partition exists, for OffsetCommit's
	// UNKNOWN_TOPIC_OR_PARTITION (groups.go); nil accepts every one.
	topicExists func(topic string, partition int32) bool

	// quotas enforce the client quotas of the metadata image
	// (quotas.go).
	quotas quotas
	// replQuotas are the replication throttles' quotas
	// (replication_throttles.go): immutable, their limits set as the
	// metadata log is applied.
	replQuotas replicationQuotas
	// ipQuotas are the image's connection_creation_rate quotas, which
	// the network layer enforces (connection_quota.go).
	ipQuotas *ipQuotas

	// produceOrder keeps a connection's produces in order while one
	// waits for its transaction's coordinator (produce_verify.go).
	produceOrder connOrder

	closed atomic.Bool // Close has begun
}

// New returns a broker listening on cfg's listener; Serve starts it.
func New(cfg Config, log *zap.Logger) (_ *Server, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry(),
		fetchSessions: newFetchSessions(cfg.FetchSessionSlots, cfg.FetchSessionEviction)}
	defer func() {
		if err != nil {
			s.closeOpened()
		}
	}()
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
		s.brokers, _ = cluster.Parse(cfg.Cluster, cfg.ControllerQuorumVoters, cfg.NodeID) // validate parsed it already
		peers = s.brokers.Size() - 1
	}
	if s.files, err = planFiles(cfg, limit, peers, 0); err != nil {
		return nil, err
	}
	// The log dir first: its lock keeps out a second broker before
	// anything is read, and the coordinator restores its offsets from it.
	if s.durable, err = openDurable(cfg, log, s.files.openSealed); err != nil {
		return nil, err
	}
	if s.durable != nil {
		existing, err := s.durable.partitions()
		if err == nil {
			s.files, err = planFiles(cfg, limit, peers, existing)
		}
		if err != nil {
			return nil, err
		}
	}
	s.files.log(log, cfg)
	specs, _ := cfg.listenerSpecs() // validate read them already
	secOpts, tlsCfg, err := s.securityOptions(specs)
	if err != nil {
		return nil, err
	}
	s.ipQuotas = newIPQuotas(s.image) // asked from the first accept on, after New has set s.member
	if s.net, err = kafkanet.New(handler{s}, append(secOpts, kafkanet.WithLogger(log), kafkanet.WithRegisterer(s.reg),
		kafkanet.WithNamespace("broker"),
		kafkanet.WithMaxConnections(s.files.maxConnections, cfg.MaxConnectionsPerIP),
		kafkanet.WithMaxInFlight(cfg.MaxInFlightPerConn), kafkanet.WithRequestMaxBytes(cfg.SocketRequestMaxBytes),
		kafkanet.WithReadTimeout(cfg.SocketReadTimeout), kafkanet.WithIdleTimeout(cfg.ConnectionsMaxIdle),
		kafkanet.WithMemoryBudget(cfg.QueuedMaxRequestBytes),
		kafkanet.WithMemoryShares(cfg.QueuedMaxRequestBytesPerConnection, cfg.QueuedMaxRequestBytesPerIP),
		kafkanet.WithConnectionQuotas(s.ipQuotas, cfg.QuotaWindowNum, cfg.QuotaWindowSize))...); err != nil {
		return nil, err
	}
	if s.brokers != nil {
		if err := s.placeInterBroker(specs); err != nil {
			return nil, err
		}
	}
	for _, spec := range specs {
		if spec.Protocol.TLS() {
			spec.TLS = tlsCfg
		}
		ln, err := s.net.ListenWith(spec)
		if err != nil {
			return nil, err
		}
		s.lns = append(s.lns, ln)
		if s.ln == nil || ln.Name() == strings.ToUpper(cfg.InterBrokerListener) {
			s.ln = ln
		}
	}
	s.host, s.port = s.ln.Advertised()
	if s.brokers == nil {
		s.brokers = cluster.Single(cluster.Node{ID: cfg.NodeID, Host: s.host, Port: s.port})
	}
	if s.data, err = newData(cfg, log, s.durable, s.files.maxPartitions); err != nil {
		return nil, err
	}
	// Before the member: it applies the metadata log, which sets their limits.
	if s.replQuotas, err = newReplicationQuotas(); err != nil {
		return nil, err
	}
	peerTLS, quorumTLS, err := s.interBrokerTLS()
	if err != nil {
		return nil, err
	}
	if s.member, err = cluster.New(cluster.Config{Brokers: s.brokers, LogDirs: cfg.LogDirs, ClusterID: s.data.clusterID,
		Endpoints: s.endpoints(), PeerTLS: peerTLS, QuorumTLS: quorumTLS,
		HeartbeatInterval: cfg.BrokerHeartbeatInterval, SessionTimeout: cfg.BrokerSessionTimeout,
		ElectionTimeout: cfg.ControllerElectionTimeout, UncleanLeaderElection: cfg.UncleanLeaderElection,
		AutoLeaderRebalance: cfg.AutoLeaderRebalance, LeaderImbalanceCheck: cfg.LeaderImbalanceCheck,
		LeaderImbalancePct: cfg.LeaderImbalancePct,
		Logger:             log, Registerer: s.reg}); err != nil {
		return nil, err
	}
	if s.replicas, err = replica.NewManager(replica.Config{Member: s.member, Store: s.data.store,
		FetchMaxBytes: cfg.FetchMaxBytes, LagTimeMax: cfg.ReplicaLagTimeMax,
		FetchPurgeInterval: cfg.FetchPurgeInterval, ProducePurgeInterval: cfg.ProducePurgeInterval,
		DeleteRecordsPurge: cfg.DeleteRecordsPurge,
		Fetcher: replica.FetcherConfig{WaitMax: cfg.ReplicaFetchWaitMax, MinBytes: cfg.ReplicaFetchMinBytes,
			MaxBytes: cfg.ReplicaFetchMaxBytes, Backoff: cfg.ReplicaFetchBackoff, Quota: s.replQuotas.follower},
		LeaderQuota: s.replQuotas.leader,
		Logger:      log, Registerer: s.reg}); err != nil {
		return nil, err
	}
	s.coords = coordinator.New(coordinator.Config{Replicas: s.replicas, Member: s.member,
		CreateTopic: s.createStateTopic, Logger: log.Named("coordinator")})
	if s.consumers, err = s.newConsumerGroups(cfg, log); err != nil {
		return nil, err
	}
	if s.groups, s.offsets, err = newGroupCoordinator(s.coords, cfg, log, s.reg, s.consumers,
		func() *sharegroup.Coordinator { return s.share.groups }); err != nil {
		return nil, err
	}
	if s.txns, s.txnTopic, err = s.newTxnCoordinator(); err != nil {
		return nil, err
	}
	if s.shareStates, s.shareStateTopic, err = s.newShareStateCoordinator(); err != nil {
		return nil, err
	}
	if s.share, err = newShareBroker(s); err != nil {
		return nil, err
	}
	if s.quotas, err = newQuotas(cfg, s); err != nil {
		return nil, err
	}
	// The authorizer before the metadata log, whose bindings it follows.
	if opts, on, _ := cfg.authorizerOptions(); on { // validate checked them
		if s.authz, err = acl.New(opts...); err != nil {
			return nil, err
		}
	}
	// The metadata log last: applying it creates topics in the store and
	// wakes the purgatories, and its leadership callback reaches the
	// peers. A broker alone seeds its log with its log dir's topics, ACL
	// bindings, SCRAM credentials, quotas and broker and group configs;
	// its dynamic broker configs are the storage's defaults first, so
	// that its topics' own configs are told from them (a topic's value
	// equal to a dynamic default is not its own).
	var kept metadata.Record
	if s.member.Alone() && s.durable != nil {
		if kept, err = s.durable.loadSecurity(); err != nil {
			return nil, err
		}
		s.data.store.SetTopicDefaults(s.topicDefaults(metadata.Empty().Apply(0, &kept)))
	}
	seed := s.replicas.Seed()
	seed.ACLs, seed.Scram, seed.Quotas, seed.Configs = kept.ACLs, kept.Scram, kept.Quotas, kept.Configs
	if err = s.member.Open(s.applied, seed); err != nil {
		return nil, err
	}
	scram, _ := parseAddScram(cfg.AddScram) // validate read it already
	s.bootstrapScram(scram)
	s.replicas.Start()
	// Offset commits name partitions that must exist, as Kafka checks its
	// metadata cache: the metadata log's image.
	s.topicExists = func(topic string, partition int32) bool {
		t, err := s.image().Topic(topic)
		return err == nil && partition >= 0 && int(partition) < len(t.Partitions)
	}
	return s, nil
}

// closeOpened closes what a New that failed had opened, last first.
func (s *Server) closeOpened() {
	if s.member != nil {
		_ = s.member.Close(context.Background(), false)
	}
	s.closePurgatories()
	if s.net != nil {
		_ = s.net.Close() // and the listener
	}
	if s.data != nil {
		_ = s.data.close()
	}
	_ = s.durable.close()
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

// Serve accepts connections on every listener until Close. It returns
// nil after Close.
func (s *Server) Serve() error {
	if !s.closed.Load() {
		for _, ln := range s.lns {
			s.log.Info("broker serving", zap.Stringer("listener", ln.Addr()), zap.String("name", ln.Name()),
				zap.String("protocol", string(ln.Protocol())), zap.String("advertised", ln.AdvertisedAddr()), zap.Int32("node_id", s.cfg.NodeID))
		}
	}
	errs := make(chan error, len(s.lns))
	for _, ln := range s.lns {
		if ln != s.ln {
			go func() { errs <- s.net.Serve(ln) }()
		}
	}
	err := s.net.Serve(s.ln)
	for range len(s.lns) - 1 {
		err = errors.Join(err, <-errs)
	}
	return err
}

// Listeners returns the broker's listeners, the inter-broker one first
// among equals: Addr is its address.
func (s *Server) Listeners() []*kafkanet.Listener { return slices.Clone(s.lns) }

// Close shuts the broker down gracefully and waits for its goroutines:
//
//  1. stop accepting connections; in a cluster, a controlled shutdown
//     (controlled.shutdown.enable): the controller moves this broker's
//     leaderships away while it still serves the connections it has
//     (package cluster); stop the peers' goroutines, the controller and
//     the broker's member of the metadata quorum;
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
	// Still serving the connections it has, but accepting no new one (a
	// client dialing now is refused, which it retries, rather than cut
	// off in the middle of its first request): clients follow the
	// leaderships as they move. Then no more replica fetches, heartbeats
	// or ISR checks; nothing is applied to the store past this point.
	err = errors.Join(err, s.member.Close(ctx, s.cfg.ControlledShutdown))
	s.coords.Wait() // the state partitions being loaded
	s.closePurgatories()
	s.net.Drain(ctx)
	err = errors.Join(err, s.data.close(), s.durable.close())
	s.log.Info("broker closed")
	return err
}

func (s *Server) closePurgatories() {
	if s.share != nil {
		s.share.close() // waiting share fetches answer; then the locks' timer
	}
	if s.txns != nil {
		_ = s.txns.Close() // its timers; what waits on it gets NOT_COORDINATOR
	}
	if s.groups != nil {
		_ = s.groups.Close() // its purgatories: waiting JoinGroups get NOT_COORDINATOR
	}
	if s.consumers != nil {
		_ = s.consumers.Close() // its members' timers
	}
	if s.replicas != nil {
		s.replicas.Close()
	}
}
