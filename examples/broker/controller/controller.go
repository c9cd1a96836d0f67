package controller

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/metalog"
	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// Controller is one broker's controller: active while its metadata log
// leads the quorum, idle otherwise.
type Controller struct {
	cfg     config         // immutable
	log     *metalog.Log   // immutable
	brokers []int32        // the cluster's node ids, ascending; immutable
	zlog    *zap.Logger    // immutable
	wg      sync.WaitGroup // expiries and activations in flight

	// decideMu serializes decisions: each reads the image its
	// predecessor's record left. Taken before mu.
	decideMu sync.Mutex

	mu         sync.Mutex // guards the following
	active     bool       // elected, and the barrier passed: decisions allowed
	activating bool       // an activation of the current term is in flight
	term       uint64     // bumped at each activation and deactivation
	sessions   map[int32]*session
	fencing    map[int32]bool  // brokers whose expired session's fencing is being decided
	shutdown   map[int32]int64 // brokers in controlled shutdown, by the epoch they asked at
	closed     bool

	rebalancer *rebalancer // the active term's leader imbalance check, or nil

	// prevLeader replaces the metadata log's PreviousLeader in tests.
	prevLeader func() (id int32, silent time.Duration, ok bool)

	// tm carries the sessions' deadlines and the imbalance check; nil
	// for a broker alone, as is the purgatory.
	tm        *timer.Timer
	purgatory *purgatory.Purgatory[int32] // "BrokerSession"
}

// New returns the controller over log for a cluster of brokers (node ids).
// It is idle until LeaderChanged says this broker leads.
func New(log *metalog.Log, brokers []int32, opts ...Option) (*Controller, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.clusterID == "" {
		cfg.clusterID = NewClusterID()
	}
	c := &Controller{cfg: cfg, log: log, brokers: slices.Sorted(slices.Values(brokers)), zlog: cfg.log,
		sessions: make(map[int32]*session), fencing: make(map[int32]bool), shutdown: make(map[int32]int64)}
	if len(brokers) > 1 {
		topts := []timer.Option{timer.WithLogger(cfg.log)}
		if cfg.clock != nil {
			topts = append(topts, timer.WithClock(cfg.clock))
		}
		var err error
		if c.tm, err = timer.New(topts...); err != nil {
			return nil, err
		}
		popts := []purgatory.Option{purgatory.WithLogger(cfg.log), purgatory.WithPurgeInterval(100), purgatory.WithTimer(c.tm)}
		if cfg.reg != nil {
			popts = append(popts, purgatory.WithRegisterer(cfg.reg))
		}
		if c.purgatory, err = purgatory.New[int32]("BrokerSession", popts...); err != nil {
			c.tm.Close()
			return nil, err
		}
	}
	return c, nil
}

// NewClusterID returns a random id printed as Kafka prints cluster ids (a
// UUID in unpadded URL-safe base64).
func NewClusterID() string {
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// Brokers returns the cluster's node ids, ascending.
func (c *Controller) Brokers() []int32 { return c.brokers }

// LeaderChanged tells the controller who leads the quorum now (the
// metadata log's callback). Gaining the lead activates it, on a goroutine
// of its own: the barrier, the cluster id if the log has none, a fresh
// session for every broker. Losing it deactivates it at once: its
// sessions are dropped unexpired, and its decisions fail.
func (c *Controller) LeaderChanged(_ int32, self bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || self == c.active {
		return
	}
	if !self {
		c.deactivateLocked()
		return
	}
	c.startActivationLocked()
}

// startActivationLocked starts an activation of a new term on a goroutine
// of its own; an older one in flight gives up when it sees the term moved.
//
// REQUIRES: c.mu held.
func (c *Controller) startActivationLocked() {
	c.term++
	term := c.term
	c.activating = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.activate(term)
	}()
}

// maybeActivate activates a controller whose log leads the quorum but
// which is neither active nor activating: a leadership it was never told
// of, or an activation that gave up (its barrier failed, or the
// leadership it saw wavered). A heartbeat at an inactive controller calls
// it, so that no such controller stays idle while brokers keep asking it.
func (c *Controller) maybeActivate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.active || c.activating || !c.log.IsLeader() {
		return
	}
	c.zlog.Info("controller: leading the quorum but inactive: activating")
	c.startActivationLocked()
}

// Elect activates the controller now, in the caller's goroutine: a broker
// alone, whose local log makes it its own leader, is its controller from
// the start.
func (c *Controller) Elect() {
	c.mu.Lock()
	if c.closed || c.active {
		c.mu.Unlock()
		return
	}
	c.term++
	term := c.term
	c.activating = true
	c.mu.Unlock()
	c.activate(term)
}

// activate readies a newly elected controller, unless the term moved on.
func (c *Controller) activate(term uint64) {
	c.decideMu.Lock()
	defer c.decideMu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.term == term {
			c.activating = false
		}
		c.mu.Unlock()
	}()
	if err := c.log.Barrier(10 * time.Second); err != nil {
		if errors.Is(err, metalog.ErrNotLeader) || errors.Is(err, metalog.ErrClosed) {
			// Another election, or the shutdown: nothing is wrong.
			c.zlog.Info("controller: the leadership moved on before its new term was ready", zap.Error(err))
		} else {
			c.zlog.Warn("controller: the barrier of a new term failed", zap.Error(err))
		}
		return
	}
	c.mu.Lock()
	if c.closed || c.term != term || !c.log.IsLeader() {
		superseded := !c.closed && c.term != term && c.log.IsLeader()
		c.mu.Unlock()
		if superseded {
			// A newer activation of the same leadership runs after
			// this one (the log told of it twice, as it does at
			// start): nothing was lost.
			c.zlog.Debug("controller: an activation gave way to a newer one")
		} else {
			c.zlog.Info("controller: an activation gave up: the leadership was lost or the controller closed")
		}
		return
	}
	c.active = true
	c.mu.Unlock()
	if c.log.Image().ClusterID == "" {
		if _, err := c.log.Propose(context.Background(), &metadata.Record{ClusterID: c.cfg.clusterID}); err != nil {
			c.zlog.Warn("controller: committing the cluster id", zap.Error(err))
		}
	}
	c.zlog.Info("controller: active", zap.Int("brokers", len(c.brokers)))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active && c.term == term && c.purgatory != nil {
		c.sessionsAtActivationLocked(c.log.Image())
		c.startRebalanceLocked(term)
	}
}

// deactivateLocked drops every session: a controller that is not active
// fences nobody.
//
// REQUIRES: c.mu held.
func (c *Controller) deactivateLocked() {
	c.active = false
	c.activating = false
	c.term++
	c.stopRebalanceLocked()
	for id, s := range c.sessions {
		s.dropped.Store(true)
		s.ForceComplete()
		delete(c.sessions, id)
	}
	c.zlog.Info("controller: inactive")
}

// IsActive reports whether this broker is the active controller.
func (c *Controller) IsActive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active
}

// decide runs f on the current image and commits the record it returns,
// if any; f's error stops it. It returns the image after the record.
func (c *Controller) decide(ctx context.Context, f func(im *metadata.Image) (metadata.Record, error)) (*metadata.Image, error) {
	c.decideMu.Lock()
	defer c.decideMu.Unlock()
	if err := c.checkActive(); err != nil {
		return nil, err
	}
	im := c.log.Image()
	rec, err := f(im)
	if err != nil || rec.Empty() {
		return im, err
	}
	im, err = c.log.Propose(ctx, &rec)
	if errors.Is(err, metalog.ErrNotLeader) {
		return nil, fmt.Errorf("%w: %v", ErrNotController, err)
	}
	return im, err
}

// checkActive returns ErrClosed after Close, ErrNotController while the
// controller is not active, else nil.
func (c *Controller) checkActive() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return ErrClosed
	case !c.active:
		return ErrNotController
	}
	return nil
}

// TopicSpec is a topic to create.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string // the topic's own configs
}

// CreateTopic places a new topic on the cluster's brokers, with a new id,
// and commits it. ErrTopicExists if the name is taken.
func (c *Controller) CreateTopic(ctx context.Context, spec TopicSpec) (*metadata.Topic, error) {
	var id metadata.TopicID
	_, _ = rand.Read(id[:])
	im, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		if _, err := im.Topic(spec.Name); err == nil {
			return metadata.Record{}, fmt.Errorf("%w: %s", metadata.ErrTopicExists, spec.Name)
		}
		t, err := metadata.Place(im, c.brokers, spec.Name, id, spec.Partitions, spec.ReplicationFactor, spec.Configs)
		if err != nil {
			return metadata.Record{}, err
		}
		return metadata.Record{CreateTopics: []*metadata.Topic{t}}, nil
	})
	if err != nil {
		return nil, err
	}
	return im.TopicByID(id)
}

// DeleteTopic deletes the topic named name, or with id if name is empty,
// and returns it.
func (c *Controller) DeleteTopic(ctx context.Context, name string, id metadata.TopicID) (*metadata.Topic, error) {
	var gone *metadata.Topic
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		var err error
		if name != "" {
			gone, err = im.Topic(name)
		} else {
			gone, err = im.TopicByID(id)
		}
		if err != nil {
			return metadata.Record{}, err
		}
		return metadata.Record{DeleteTopics: []metadata.TopicID{gone.ID}}, nil
	})
	return gone, err
}

// AlterPartition commits a leader's new ISR for a partition (Kafka's
// AlterPartition), checked against its leader and partition epochs (see
// metadata.AlterISR), and returns the partition as committed.
func (c *Controller) AlterPartition(ctx context.Context, topic metadata.TopicID, index, leader, leaderEpoch, partitionEpoch int32, isr []int32) (metadata.Partition, error) {
	im, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		return metadata.AlterISR(im, topic, index, leader, leaderEpoch, partitionEpoch, isr)
	})
	if err != nil {
		return metadata.Partition{}, err
	}
	return im.Partition(topic, index)
}

// Close deactivates the controller, closes its purgatory and waits for
// its goroutines. Idempotent.
func (c *Controller) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	if c.active {
		c.deactivateLocked()
	}
	c.mu.Unlock()
	// The purgatory and the timer first: once closed they run no more
	// callbacks, so no expiry or imbalance check adds to wg after Wait
	// starts.
	var err error
	if c.purgatory != nil {
		err = c.purgatory.Close()
		c.tm.Close()
	}
	c.wg.Wait()
	return err
}
