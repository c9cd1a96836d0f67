package metalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// Log is the metadata log of one broker.
type Log struct {
	cfg   config                         // immutable
	image atomic.Pointer[metadata.Image] // the image after the last apply

	mu     sync.Mutex // guards applies (and a local log's proposals) and closed
	closed bool

	// closing is set by Stopping, and when Close begins: raft's lines
	// from then on are about the shutdown (raftLogWriter).
	closing atomic.Bool

	// The quorum; all nil for a local log.
	raft      *raft.Raft
	transport raft.Transport
	stream    *streamLayer // the TCP transport's; nil with WithTransport
	bolt      *raftboltdb.BoltStore
	observed  chan raft.Observation
	observer  *raft.Observer
	stop      chan struct{}
	done      chan struct{}

	// prevLeader is the last leader other than this broker watchLeader
	// observed (PreviousLeader), -1 before one.
	prevLeader atomic.Int32
}

// New opens the metadata log: a local one without voters, else this
// broker's member of the quorum, bootstrapped with the voters the first
// time it starts.
func New(opts ...Option) (*Log, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := &Log{cfg: cfg}
	l.prevLeader.Store(-1)
	l.image.Store(metadata.Empty())
	if len(cfg.voters) == 0 {
		return l, nil
	}
	if err := l.startRaft(); err != nil {
		l.closeStores()
		return nil, err
	}
	return l, nil
}

// startRaft opens the stores and the transport and starts the Raft node.
func (l *Log) startRaft() error {
	cfg := l.cfg
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, JSONFormat: true,
		Output: newRaftLogWriter(cfg.log.Named("raft"), &l.closing, cfg.voters, l.peerFenced)})
	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
		err    error
	)
	if cfg.dir == "" {
		mem := raft.NewInmemStore()
		logs, stable, snaps = mem, mem, raft.NewInmemSnapshotStore()
	} else {
		if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
			return fmt.Errorf("metalog: %w", err)
		}
		if l.bolt, err = raftboltdb.NewBoltStore(filepath.Join(cfg.dir, "raft.db")); err != nil {
			return fmt.Errorf("metalog: %w", err)
		}
		logs, stable = l.bolt, l.bolt
		if snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.dir, 2, hlog); err != nil {
			return fmt.Errorf("metalog: %w", err)
		}
	}
	var selfAddr string
	servers := make([]raft.Server, 0, len(cfg.voters))
	for _, v := range cfg.voters {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: serverID(v.ID), Address: raft.ServerAddress(v.Addr)})
		if v.ID == cfg.self {
			selfAddr = v.Addr
		}
	}
	l.transport = cfg.transport
	if l.transport == nil {
		if l.stream, err = listenStream(selfAddr, cfg.tlsServer, cfg.tlsClient); err != nil {
			return fmt.Errorf("metalog: listening for the quorum on %s: %w", selfAddr, err)
		}
		l.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: l.stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: hlog})
	}
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.self)
	rc.Logger = hlog
	rc.HeartbeatTimeout, rc.ElectionTimeout = cfg.heartbeat, cfg.heartbeat
	rc.LeaderLeaseTimeout = cfg.heartbeat / 2
	rc.CommitTimeout = min(rc.CommitTimeout, cfg.heartbeat/10)
	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("metalog: %w", err)
	}
	if !existing {
		if err := raft.BootstrapCluster(rc, logs, stable, snaps, l.transport, raft.Configuration{Servers: servers}); err != nil {
			return fmt.Errorf("metalog: bootstrapping the quorum: %w", err)
		}
	}
	if l.raft, err = raft.NewRaft(rc, (*fsm)(l), logs, stable, snaps, l.transport); err != nil {
		return fmt.Errorf("metalog: %w", err)
	}
	l.observed = make(chan raft.Observation, 16)
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	l.observer = raft.NewObserver(l.observed, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	l.raft.RegisterObserver(l.observer)
	go l.watchLeader()
	return nil
}

// watchLeader calls the LeaderChanged callback on each observation, with
// the leader as it is then (an observation may be dropped when the
// channel is full: the next one reports the latest state).
func (l *Log) watchLeader() {
	defer close(l.done)
	for {
		select {
		case <-l.stop:
			return
		case <-l.observed:
			leader, self := l.Leader()
			if leader >= 0 && leader != l.cfg.self {
				l.prevLeader.Store(leader)
			}
			l.cfg.leader(leader, self)
		}
	}
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// peerFenced reports whether broker id is fenced in the image: shut down
// in a controlled way, or away past its session.
func (l *Log) peerFenced(id int32) bool {
	im := l.image.Load()
	return im != nil && im.Fenced(id)
}

// Image returns the image after the last record applied here. Lock-free.
func (l *Log) Image() *metadata.Image { return l.image.Load() }

// Leader returns the quorum leader's node id, or -1 when none is known,
// and whether it is this broker. A local log is its own leader.
func (l *Log) Leader() (id int32, self bool) {
	if l.raft == nil {
		return l.cfg.self, true
	}
	_, sid := l.raft.LeaderWithID()
	n, err := strconv.ParseInt(string(sid), 10, 32)
	if err != nil {
		return -1, false
	}
	return int32(n), l.raft.State() == raft.Leader && int32(n) == l.cfg.self
}

// PreviousLeader returns the last leader of the quorum other than this
// broker that it observed, and the last time this broker heard from a
// leader or granted a vote (raft's LastContact: as a follower, never
// earlier than its last word from that leader). ok is false when there is
// neither (a local log, a broker that never followed). A broker just
// elected uses it to know how long the leader it replaced has been silent
// to it.
func (l *Log) PreviousLeader() (id int32, lastContact time.Time, ok bool) {
	if l.raft == nil {
		return -1, time.Time{}, false
	}
	id, at := l.prevLeader.Load(), l.raft.LastContact()
	return id, at, id >= 0 && !at.IsZero()
}

// VerifyLeader returns nil once a quorum of voters has answered this
// broker as its leader, after the call: each of them counts its last
// contact with the leader from then on (PreviousLeader). A broker not
// leading, or cut off from the quorum, gets an error. A local log (a
// broker alone) always leads.
func (l *Log) VerifyLeader() error {
	if l.raft == nil {
		return nil
	}
	return l.raft.VerifyLeader().Error()
}

// IsLeader reports whether this broker is the quorum's leader (the active
// controller) as far as it knows.
func (l *Log) IsLeader() bool {
	_, self := l.Leader()
	return self
}

// Snapshot writes a snapshot of the image as applied here, so that the
// log before it can be compacted and a restart restores the image from
// it (raft's snapshots, taken on their own every few thousand records):
// for tests and tools. A local log (no quorum) keeps nothing to snapshot.
func (l *Log) Snapshot() error {
	if l.raft == nil {
		return nil
	}
	return l.raft.Snapshot().Error()
}

// Propose commits rec and returns the image after it, once applied here.
// It fails with ErrNotLeader when this broker is not the leader, or stops
// being it before rec is committed (rec may still be committed: the
// caller decides again from the image). It blocks for a quorum round
// trip; ctx bounds the wait to enqueue it.
func (l *Log) Propose(ctx context.Context, rec *metadata.Record) (*metadata.Image, error) {
	if l.raft == nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.closed {
			return nil, ErrClosed
		}
		before := l.image.Load()
		return l.applyLocked(before.Index+1, before, rec), nil
	}
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	f := l.raft.Apply(rec.Encode(), timeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
			errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrAbortedByRestore) {
			return nil, fmt.Errorf("%w: %v", ErrNotLeader, err)
		}
		if errors.Is(err, raft.ErrRaftShutdown) {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("metalog: %w", err)
	}
	im, _ := f.Response().(*metadata.Image)
	if im == nil {
		return nil, fmt.Errorf("metalog: a record failed to apply")
	}
	return im, nil
}

// Barrier waits until every record committed before it is applied here:
// a new leader calls it before deciding from its image. It fails with
// ErrNotLeader when the leadership moves meanwhile, ErrClosed when the
// log shuts down.
func (l *Log) Barrier(timeout time.Duration) error {
	if l.raft == nil {
		return nil
	}
	switch err := l.raft.Barrier(timeout).Error(); {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	default:
		return fmt.Errorf("metalog: %w", err)
	}
}

// TransferLeadership hands the quorum's leadership to another voter, as a
// controlled shutdown does. A local log has no one to give it to.
func (l *Log) TransferLeadership() error {
	if l.raft == nil || !l.IsLeader() {
		return nil
	}
	return l.raft.LeadershipTransfer().Error()
}

// applyLocked applies rec at index and calls the callback.
//
// REQUIRES: l.mu held.
func (l *Log) applyLocked(index uint64, before *metadata.Image, rec *metadata.Record) *metadata.Image {
	after := before.Apply(index, rec)
	l.image.Store(after)
	l.cfg.applied(before, after, rec)
	return after
}

// Stopping says that the broker is shutting down, ahead of Close: what
// raft logs from then on of peers it cannot reach (shutting down too, in
// a cluster's clean stop) is expected, and logged at INFO.
func (l *Log) Stopping() { l.closing.Store(true) }

// Close stops the quorum member (its goroutines, its transport) and
// closes its stores. Idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.closing.Store(true)
	if l.raft == nil {
		return nil
	}
	// 1. Raft first: its FSM goroutine takes l.mu to apply.
	err := l.raft.Shutdown().Error()
	// 2. The leader watcher.
	l.raft.DeregisterObserver(l.observer)
	close(l.stop)
	<-l.done
	// 3. The transport and the stores.
	if c, ok := l.transport.(interface{ Close() error }); ok {
		err = errors.Join(err, c.Close())
	}
	if l.stream != nil {
		err = errors.Join(err, l.stream.Close()) // the connections peers opened
	}
	l.closeStores()
	return err
}

func (l *Log) closeStores() {
	if l.stream != nil {
		_ = l.stream.Close()
	}
	if l.bolt != nil {
		_ = l.bolt.Close()
	}
}
