package consumergroup

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/timer"
)

// minTimeout is the shortest timeout a task is scheduled with: one tick of
// the timer, so that scheduling never runs a task at once (under the
// group's mutex, which the task takes).
const minTimeout = time.Millisecond

// Coordinator is the KIP-848 consumer group coordinator of one broker: it
// holds the consumer groups of the offsets partitions the broker leads
// (the server routes their requests to it), computes their target
// assignments and walks each member towards its own. Its methods never
// block.
type Coordinator struct {
	cfg config       // immutable
	clk timer.Clock  // the timeouts' clock
	log *zap.Logger  //
	tm  *timer.Timer // every member's session and rebalance timeout

	closed atomic.Bool

	mu     sync.Mutex // guards the following; a leaf, taken after a group's mutex
	groups map[string]*group
}

// New returns a coordinator with no group.
func New(opts ...Option) (*Coordinator, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, clk: cfg.clock, log: cfg.log, groups: map[string]*group{}}
	if c.clk == nil {
		c.clk = timer.NewRealClock()
	}
	var err error
	if c.tm, err = timer.New(timer.WithClock(c.clk), timer.WithLogger(c.log)); err != nil {
		return nil, fmt.Errorf("consumergroup: %w", err)
	}
	return c, nil
}

// Close stops the coordinator's timer: no session expires after it. It
// is idempotent; heartbeats after it are answered COORDINATOR_NOT_AVAILABLE
// (the timer refuses their sessions).
func (c *Coordinator) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.tm.Close()
	return nil
}

// lookup returns the group named id, created if create and it does not
// exist; nil if it does not and !create.
func (c *Coordinator) lookup(id string, create bool) *group {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[id]
	if g == nil && create {
		g = newGroup(id)
		c.groups[id] = g
	}
	return g
}

// dropLocked forgets g, if it is still the group of its id, and cancels
// its members' timers.
//
// REQUIRES: g.mu held (g.gone is set under it).
func (c *Coordinator) dropLocked(g *group) {
	g.gone = true
	for _, m := range g.members {
		c.tm.Cancel(&m.session)
		c.tm.Cancel(&m.rebalance)
		c.tm.Cancel(&m.classicWait)
	}
	c.mu.Lock()
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
	}
	c.mu.Unlock()
}

// emptied runs WithOnEmpty's hook for group, which has just been left
// without members. REQUIRES: no lock held.
func (c *Coordinator) emptied(group string) {
	if c.cfg.onEmpty != nil && !c.closed.Load() {
		c.cfg.onEmpty(group)
	}
}

// newMemberID returns a member id for a v0 member that asked the
// coordinator for one: 16 random bytes as Kafka's Uuid prints them.
func newMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
