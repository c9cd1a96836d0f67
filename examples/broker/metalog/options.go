package metalog

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// Voter is a member of the quorum: a broker's node id and the address its
// Raft transport listens on.
type Voter struct {
	ID   int32
	Addr string
}

// Applied is called after each record is applied; rec is nil when a
// snapshot replaced the image.
type Applied func(before, after *metadata.Image, rec *metadata.Record)

// LeaderChanged is called, on a goroutine of the log's, when the quorum's
// leader changes or this broker's Raft state does: leader is the new
// leader's id (-1 if none is known), self whether it is this broker.
type LeaderChanged func(leader int32, self bool)

type config struct {
	self      int32
	voters    []Voter // empty: a local log
	dir       string  // "" keeps the quorum's state in memory
	log       *zap.Logger
	applied   Applied
	leader    LeaderChanged
	heartbeat time.Duration // raft's HeartbeatTimeout and ElectionTimeout
	transport raft.Transport
	// tlsServer and tlsClient make the quorum's connections mutual TLS
	// (stream.go); nil: plain TCP.
	tlsServer, tlsClient *tls.Config
}

func defaultConfig() config {
	return config{log: zap.NewNop(), heartbeat: time.Second,
		applied: func(_, _ *metadata.Image, _ *metadata.Record) {}, leader: func(int32, bool) {}}
}

func (c *config) validate() error {
	if len(c.voters) == 0 {
		return nil
	}
	seen := false
	for _, v := range c.voters {
		seen = seen || v.ID == c.self
	}
	switch {
	case !seen:
		return fmt.Errorf("metalog: node %d is not a voter", c.self)
	case c.heartbeat < 10*time.Millisecond:
		return errors.New("metalog: the heartbeat timeout must be at least 10ms")
	}
	return nil
}

// Option configures a Log.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithSelf sets this broker's node id.
func WithSelf(id int32) Option { return optionFunc(func(c *config) { c.self = id }) }

// WithVoters sets the quorum's voters, this broker among them. Without
// it the log is local: a broker alone.
func WithVoters(vs []Voter) Option { return optionFunc(func(c *config) { c.voters = vs }) }

// WithDir keeps the quorum's log, votes and snapshots in dir; without it
// they are in memory.
func WithDir(dir string) Option { return optionFunc(func(c *config) { c.dir = dir }) }

// WithLogger logs the quorum's warnings and errors; no-op by default.
func WithLogger(l *zap.Logger) Option { return optionFunc(func(c *config) { c.log = l }) }

// WithApplied sets the callback run after each apply.
func WithApplied(f Applied) Option { return optionFunc(func(c *config) { c.applied = f }) }

// WithLeaderChanged sets the callback run when the leader changes.
func WithLeaderChanged(f LeaderChanged) Option { return optionFunc(func(c *config) { c.leader = f }) }

// WithHeartbeatTimeout sets Raft's heartbeat and election timeouts (1s by
// default, hashicorp/raft's): a follower that hears nothing from its
// leader this long stands for election.
func WithHeartbeatTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.heartbeat = d })
}

// WithTransport replaces the TCP transport (tests use Raft's in-memory
// one); the voters' addresses are then the transport's.
func WithTransport(t raft.Transport) Option { return optionFunc(func(c *config) { c.transport = t }) }

// WithTLS has the quorum's voters speak TLS between them: server accepts
// (it should require and verify client certificates: the voters prove
// who they are), client dials. Both nil (the default): plain TCP.
func WithTLS(server, client *tls.Config) Option {
	return optionFunc(func(c *config) { c.tlsServer, c.tlsClient = server, client })
}
