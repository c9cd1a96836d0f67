package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/metalog"
)

// raftDir is the quorum's directory in log.dirs.
const raftDir = "__cluster_metadata"

// ControllerTimeout bounds a decision's wait for the quorum: a topic
// created or deleted, an ISR changed, a heartbeat handled.
const ControllerTimeout = 10 * time.Second

// Config is what a Member is made of.
type Config struct {
	Brokers *Brokers // the cluster, this broker among them
	// LogDirs keeps the quorum's log and votes in its __cluster_metadata
	// directory; empty keeps them in memory.
	LogDirs string
	// ClusterID is the id the controller commits when it first leads a
	// new cluster.
	ClusterID string
	// Endpoints are this broker's listeners, registered with the active
	// controller (registration.go) so that the other brokers name it at
	// them.
	Endpoints []metadata.Endpoint
	// PeerTLS, when set, is the TLS the brokers speak between them: the
	// peers' clients dial the other brokers' --cluster addresses with it
	// (their inter-broker listener is SSL), and the quorum's voters dial
	// each other with it, accepted with QuorumTLS (mutual TLS: each side
	// shows its certificate). Both nil: plain TCP.
	PeerTLS, QuorumTLS *tls.Config

	HeartbeatInterval     time.Duration // broker.heartbeat.interval.ms
	SessionTimeout        time.Duration // broker.session.timeout.ms
	ElectionTimeout       time.Duration // controller.quorum.election.timeout.ms
	UncleanLeaderElection bool          // unclean.leader.election.enable, the brokers' default
	AutoLeaderRebalance   bool          // auto.leader.rebalance.enable
	LeaderImbalanceCheck  time.Duration // leader.imbalance.check.interval.seconds
	LeaderImbalancePct    int           // leader.imbalance.per.broker.percentage

	Logger     *zap.Logger
	Registerer prometheus.Registerer // the controller's metrics
}

// Member is this broker's membership in its cluster (Kafka's
// BrokerServer side of KRaft): the metadata log it applies (package
// metalog), the controller it runs, active while this broker leads the
// quorum (package controller), and, in a cluster of several, its peers
// (one client per other broker) and its heartbeat to the active
// controller. Who leads each partition, at which leader epoch, with which
// ISR, is read from the log's image, never decided here.
type Member struct {
	cfg     Config // immutable
	brokers *Brokers
	log     *zap.Logger

	// meta and ctrl are set by Open; ctrlReady once both are: the log's
	// leadership callback waits for it.
	meta      *metalog.Log
	ctrl      *controller.Controller
	ctrlReady atomic.Bool

	// image is the metadata as applied here (Image): stored by the log's
	// callback before the caller's runs, so that what the callback reads
	// is there while Open is still opening the log, when a restart
	// restores a snapshot before meta is set.
	image atomic.Pointer[metadata.Image]

	// closing is set when Close begins: what fails to reach a peer from
	// then on is expected (peerLogger).
	closing atomic.Bool

	peers *peers // nil for a broker alone
	// sessionHook is OnSessionChange's.
	sessionHook atomic.Pointer[func()]
	// leaderSeen is closed, and replaced, at each change of the quorum's
	// leader (AwaitLeader).
	leaderSeen atomic.Pointer[chan struct{}]

	// The lifetime of the goroutines Go starts: cancelled by Close, which
	// waits for them.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
	// goMu orders Go's wg.Add before Close's wg.Wait: once goClosed is
	// set, Go starts no goroutine.
	goMu     sync.Mutex
	goClosed bool
}

// New returns this broker's membership in cfg.Brokers, with its peers'
// clients made (nothing dialled yet); Open opens the metadata log.
func New(cfg Config) (*Member, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	m := &Member{cfg: cfg, brokers: cfg.Brokers, log: cfg.Logger}
	m.ctx, m.stop = context.WithCancel(context.Background())
	if cfg.Brokers.Size() > 1 {
		var err error
		if m.peers, err = newPeers(m); err != nil {
			m.stop()
			return nil, err
		}
	}
	return m, nil
}

// Open opens the metadata log, whose records applied calls as they are
// applied (rec nil: a snapshot replaced the image), and the controller. A
// broker alone has a local log, seeded with seed (the topics its log dir
// holds), and is its own controller at once; a broker of a cluster joins
// the quorum, and its controller activates when the quorum elects it.
// Then the heartbeat starts.
func (m *Member) Open(applied func(before, after *metadata.Image, rec *metadata.Record), seed *metadata.Record) error {
	voters := m.brokers.voters
	onApplied := func(before, after *metadata.Image, rec *metadata.Record) {
		m.image.Store(after)
		applied(before, after, rec)
	}
	opts := []metalog.Option{metalog.WithSelf(m.brokers.self), metalog.WithLogger(m.log.Named("metalog")),
		metalog.WithApplied(onApplied)}
	if len(voters) > 0 {
		opts = append(opts, metalog.WithVoters(voters), metalog.WithLeaderChanged(m.leaderChanged),
			metalog.WithHeartbeatTimeout(m.cfg.ElectionTimeout))
		if m.cfg.LogDirs != "" {
			opts = append(opts, metalog.WithDir(filepath.Join(m.cfg.LogDirs, raftDir)))
		}
		if m.cfg.QuorumTLS != nil {
			opts = append(opts, metalog.WithTLS(m.cfg.QuorumTLS, m.cfg.PeerTLS))
		}
	}
	var err error
	if m.meta, err = metalog.New(opts...); err != nil {
		return err
	}
	m.image.CompareAndSwap(nil, m.meta.Image()) // nothing applied yet: the log's first image
	if m.ctrl, err = controller.New(m.meta, m.brokers.IDs(), controller.WithSessionTimeout(m.cfg.SessionTimeout),
		controller.WithClusterID(m.cfg.ClusterID), controller.WithLogger(m.log.Named("controller")),
		controller.WithUncleanLeaderElection(m.cfg.UncleanLeaderElection),
		controller.WithHeartbeatInterval(m.cfg.HeartbeatInterval),
		controller.WithAutoLeaderRebalance(m.cfg.AutoLeaderRebalance, m.cfg.LeaderImbalanceCheck, m.cfg.LeaderImbalancePct),
		controller.WithRegisterer(m.cfg.Registerer)); err != nil {
		_ = m.meta.Close()
		m.meta = nil
		return err
	}
	m.ctrlReady.Store(true)
	if len(voters) > 0 {
		if leader, self := m.meta.Leader(); self {
			m.leaderChanged(leader, self)
		}
		m.Go(func(context.Context) { m.peers.heartbeat() })
		return nil
	}
	// A broker alone: its own controller, its log dir's topics its image.
	m.ctrl.Elect()
	if seed != nil && !seed.Empty() {
		if _, err := m.meta.Propose(context.Background(), seed); err != nil {
			return err
		}
	}
	return nil
}

// leaderChanged is the metadata log's callback: the controller follows
// the quorum's leadership, and the heartbeats go to the new leader at once.
func (m *Member) leaderChanged(leader int32, self bool) {
	if ch := m.leaderSeen.Swap(newSignal()); ch != nil {
		close(*ch) // AwaitLeader's waiters look again
	}
	if !m.ctrlReady.Load() {
		return // Open is still opening the log; it asks again once ready
	}
	m.ctrl.LeaderChanged(leader, self)
	if m.peers != nil {
		m.peers.kickHeartbeat()
	}
}

// Go runs f on a goroutine of its own until Close, which cancels ctx and
// waits for it: the replica fetchers, the ISR check, the ISR changes sent
// to the controller, a transaction's markers and KIP-890 checks sent to
// other brokers. Once Close has begun, f runs on the caller's goroutine
// instead, with ctx done.
func (m *Member) Go(f func(ctx context.Context)) {
	m.goMu.Lock()
	if m.goClosed {
		// Close has begun waiting, or is done: f runs here, with the
		// context already done, so that what it sends fails at once
		// (a request still served while the broker shuts down).
		m.goMu.Unlock()
		f(m.ctx)
		return
	}
	m.wg.Add(1)
	m.goMu.Unlock()
	go func() {
		defer m.wg.Done()
		f(m.ctx)
	}()
}

// Close shuts the membership down:
//
//  1. with controlled, a controlled shutdown (controlled.shutdown.enable):
//     the controller moves this broker's leaderships away while it still
//     serves the connections it has (heartbeat.go), bounded by ctx;
//  2. stop the goroutines (Go's, the heartbeat) and the peers' clients;
//  3. close the controller, then the metadata log: nothing is applied past
//     this point.
func (m *Member) Close(ctx context.Context, controlled bool) error {
	m.closing.Store(true)
	if m.meta != nil {
		m.meta.Stopping()
	}
	if m.peers != nil && controlled {
		m.peers.controlledShutdown(ctx)
	}
	m.stop()
	m.goMu.Lock()
	m.goClosed = true
	m.goMu.Unlock()
	m.wg.Wait()
	if m.peers != nil {
		m.peers.closeClients()
	}
	if m.meta == nil {
		return nil // never opened
	}
	return errors.Join(m.ctrl.Close(), m.meta.Close())
}

// Brokers returns the cluster's brokers.
func (m *Member) Brokers() *Brokers { return m.brokers }

// Self returns this broker's node id.
func (m *Member) Self() int32 { return m.brokers.self }

// Alone reports whether this broker is a cluster of one: no peers, no
// followers, no quorum.
func (m *Member) Alone() bool { return m.peers == nil }

// Epoch returns this broker's epoch, its incarnation (the time it
// started): its registration at the controller, which a follower's fetches
// carry. 0 for a broker alone.
func (m *Member) Epoch() int64 {
	if m.peers == nil {
		return 0
	}
	return m.peers.epoch
}

// Image returns the cluster's metadata as this broker has applied it,
// from the moment Open's log applies or restores anything.
func (m *Member) Image() *metadata.Image { return m.image.Load() }

// SnapshotMetadata writes a snapshot of the metadata log (Log.Snapshot).
func (m *Member) SnapshotMetadata() error { return m.meta.Snapshot() }

// Leader returns the quorum leader's node id (the active controller's), or
// -1 during an election, and whether it is this broker.
func (m *Member) Leader() (id int32, self bool) { return m.meta.Leader() }

// AwaitLeader returns the quorum's leader as Leader does, once one is
// known, waiting for an election in progress until ctx is done (a
// request forwarded to the controller right after the cluster started or
// lost its controller waits for the next one, as Kafka's brokers queue
// what they forward).
func (m *Member) AwaitLeader(ctx context.Context) (id int32, self bool, err error) {
	for {
		changed := m.leaderSeen.Load()
		if changed == nil {
			m.leaderSeen.CompareAndSwap(nil, newSignal())
			continue
		}
		if id, self = m.Leader(); id >= 0 {
			return id, self, nil
		}
		select {
		case <-ctx.Done():
			return -1, false, ctx.Err()
		case <-*changed:
		}
	}
}

func newSignal() *chan struct{} {
	ch := make(chan struct{})
	return &ch
}

// Controller returns this broker's controller, which decides only while
// it is active (IsController).
func (m *Member) Controller() *controller.Controller { return m.ctrl }

// IsController reports whether this broker is the active controller.
func (m *Member) IsController() bool { return m.ctrl.IsActive() }

// Registered reports whether the image holds this broker's registration
// at its current epoch, unfenced. Until it does, a broker of a cluster
// leads nothing, whatever the image says: a restarted broker's image may
// still name it leader of partitions from before it restarted (its
// registration, not yet committed, is what takes it out of their ISR), and
// a leader that lost its log must not serve, nor have a follower truncate
// to it. A broker alone is always registered.
func (m *Member) Registered() bool { return m.RegisteredIn(m.Image()) }

// RegisteredIn reports whether im has this broker registered, unfenced,
// at its current epoch. A broker alone always is.
func (m *Member) RegisteredIn(im *metadata.Image) bool {
	if m.peers == nil {
		return true
	}
	b, ok := im.Broker(m.brokers.self)
	return ok && b.Epoch == m.peers.epoch && !b.Fenced
}

// FollowerCurrent reports whether broker id may fetch as a follower: it
// is registered and unfenced in the image, at epoch. A fetch before v15
// carries no broker epoch (-1): anyone can name any broker id in it, so
// it is never a follower's; this cluster's own fetchers send v15 and up.
// A broker alone has no followers.
func (m *Member) FollowerCurrent(id int32, epoch int64) bool {
	if m.peers == nil || epoch < 0 {
		return false
	}
	b, ok := m.Image().Broker(id)
	return ok && !b.Fenced && b.Epoch == epoch
}
