package group

import (
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// RebalanceKey is a key of the Rebalance purgatory: a group's delayed join
// (Kafka's GroupJoinKey), its delayed sync (GroupSyncKey), or one member's
// waiting JoinGroup. Only the coordinator makes them.
type RebalanceKey struct {
	group  string
	member string
	kind   keyKind
}

type keyKind uint8

const (
	groupJoinKey keyKind = iota
	groupSyncKey
	memberJoinKey
)

// memberKey is a key of the Heartbeat purgatory (Kafka's MemberKey).
type memberKey struct{ group, member string }

// A Waiter submits the operation a JoinGroup waits as, on behalf of the
// request. The server ties it to the request's connection (its context),
// so that a client that goes away completes it, which withdraws its join.
// A nil Waiter submits to the purgatory directly.
type Waiter interface {
	// Wait submits op to p under keys, with timeout, as
	// p.TryCompleteElseWatch does. An error means op was not taken: the
	// coordinator then answers the request itself.
	Wait(p *purgatory.Purgatory[RebalanceKey], op operation.Operation, timeout time.Duration, keys []RebalanceKey) error
}

// Coordinator is the group coordinator of one broker: it holds the groups
// it owns (WithOwner: in the broker, those of the offsets partitions it
// leads, loaded with Load and dropped with Unload) and their committed
// offsets. Its methods never block: a request that has to wait is answered later,
// through the callback it gave, from whichever goroutine ends the wait.
type Coordinator struct {
	cfg config       // immutable, as everything up to closed
	clk timer.Clock  // deadlines and timestamps
	log *zap.Logger  //
	tm  *timer.Timer // the purgatories' shared timer

	// wallOrigin is the wall-clock time when the coordinator's clock read
	// clkOrigin: they convert the clock's times to those a store keeps.
	wallOrigin time.Time
	clkOrigin  time.Duration

	rebalance *purgatory.Purgatory[RebalanceKey] // Kafka's "Rebalance"
	sessions  *purgatory.Purgatory[memberKey]    // Kafka's "Heartbeat"
	expiry    *purgatory.Purgatory[string]       // offset retention, by group

	closed atomic.Bool

	mu     sync.Mutex // guards the following; a leaf, taken after a group's mutex
	groups map[string]*group
	// producers indexes the groups with a transaction's offsets pending
	// by producer id (Kafka's openGroupsForProducer), so that a marker
	// finds the groups it completes without a scan.
	producers map[int64]map[*group]struct{}
}

// New returns a coordinator with its purgatories running, and no group:
// Load brings back those of a store.
func New(opts ...Option) (*Coordinator, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, clk: cfg.clock, log: cfg.log, groups: make(map[string]*group),
		producers: make(map[int64]map[*group]struct{})}
	if c.clk == nil {
		c.clk = timer.NewRealClock()
	}
	c.wallOrigin, c.clkOrigin = cfg.wall(), c.clk.Now()
	var err error
	if c.tm, err = timer.New(timer.WithClock(c.clk), timer.WithLogger(c.log)); err != nil {
		return nil, fmt.Errorf("group: %w", err)
	}
	popts := []purgatory.Option{purgatory.WithTimer(c.tm), purgatory.WithLogger(c.log), purgatory.WithPurgeInterval(cfg.purgeInterval)}
	if cfg.reg != nil {
		popts = append(popts, purgatory.WithRegisterer(cfg.reg))
	}
	if c.rebalance, err = purgatory.New[RebalanceKey]("Rebalance", popts...); err == nil {
		if c.sessions, err = purgatory.New[memberKey]("Heartbeat", popts...); err == nil {
			c.expiry, err = purgatory.New[string]("OffsetExpiration", popts...)
		}
	}
	if err != nil {
		c.closePurgatories()
		c.tm.Close()
		return nil, fmt.Errorf("group: %w", err)
	}
	return c, nil
}

// Close answers every waiting request and stops the coordinator:
//
//  1. refuse new requests (COORDINATOR_NOT_AVAILABLE, as Kafka answers a
//     coordinator that is not active);
//  2. close the purgatories: every waiting JoinGroup is answered
//     NOT_COORDINATOR, as Kafka answers the requests of a group it unloads;
//     sessions, delayed joins and syncs and offset expirations end without
//     effect;
//  3. answer every waiting SyncGroup NOT_COORDINATOR;
//  4. stop the timer.
//
// Close is idempotent and returns nil.
func (c *Coordinator) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.closePurgatories()
	// Every section that takes a group's mutex from now on sees closed
	// and parks nothing; those before it are done once we hold it.
	c.mu.Lock()
	gs := slices.Collect(maps.Values(c.groups))
	c.mu.Unlock()
	for _, g := range gs {
		var a after
		g.mu.Lock()
		for _, m := range g.members {
			g.answerSyncLocked(m, SyncResult{Err: errNotCoord}, &a)
		}
		g.unlock()
		a.run()
	}
	c.tm.Close()
	c.log.Debug("group coordinator closed", zap.Int("groups", len(gs)))
	return nil
}

func (c *Coordinator) closePurgatories() {
	if c.rebalance != nil {
		_ = c.rebalance.Close()
	}
	if c.sessions != nil {
		_ = c.sessions.Close()
	}
	if c.expiry != nil {
		_ = c.expiry.Close()
	}
}

// lockGroup returns group id, locked and alive, creating it (Empty) when
// create is set; nil if it does not exist. It fails with
// COORDINATOR_NOT_AVAILABLE once the coordinator is closed: checked under
// the group's mutex, so that nothing is parked on a group after Close
// answered what was parked there.
func (c *Coordinator) lockGroup(id string, create bool, a *after) (*group, *kerr.Error) {
	for {
		if c.closed.Load() {
			return nil, errNotAvailable
		}
		c.mu.Lock()
		g := c.groups[id]
		if g == nil {
			if !create {
				c.mu.Unlock()
				return nil, nil
			}
			if c.cfg.owns != nil && !c.cfg.owns(id) {
				// Its offsets partition is not loaded here (any more):
				// checked under c.mu, which Unload takes after making
				// it unowned, so no group outlives its unloading.
				c.mu.Unlock()
				return nil, errNotCoord
			}
			// Locking a group nobody else can see yet cannot wait, so it
			// is safe under the leaf c.mu.
			g = newGroup(c, id)
			g.mu.Lock()
			c.groups[id] = g
			c.mu.Unlock()
			g.armExpiryLocked(a) // an Empty group is deleted if nothing happens in it
			return g, nil
		}
		c.mu.Unlock()
		g.mu.Lock()
		if c.closed.Load() {
			g.unlock()
			return nil, errNotAvailable
		}
		if g.st != Dead {
			return g, nil
		}
		// Whoever killed it took it out of the map before unlocking it:
		// look again.
		g.unlock()
	}
}

// killLocked makes g Dead and forgets it, with its offsets. Whatever waits
// on g completes: a pending member's session, the offset expiration.
//
// REQUIRES: g.mu held.
func (c *Coordinator) killLocked(g *group, a *after) {
	for id := range g.members {
		g.removeLocked(id, a) // Kafka kills only Empty groups; this is for safety
	}
	for id := range g.pending {
		a.checkSession(g, id)
	}
	g.dropTxnsLocked() // a marker finds nothing of g's
	g.transitionLocked(Dead, a)
	g.disarmExpiryLocked(a)
	a.checkJoin(g)
	a.checkSync(g)
	c.mu.Lock()
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
	}
	c.mu.Unlock()
}

// newMemberID returns prefix-UUID, as Kafka names members after their
// client id (dynamic) or instance id (static).
func newMemberID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// after is what a section under a group's mutex leaves to do once the mutex
// is released: answers to send, and calls into the purgatories, whose
// TryComplete takes the group's mutex (it is every operation's lock) and
// whose callbacks may take it too. Go's mutexes are not reentrant, where
// Kafka's group lock is; this is the price. The calls run in the order
// recorded. Each answer is taken off its member under the mutex when it is
// recorded, so it is sent once.
type after struct{ fns []func() }

func (a *after) do(f func()) { a.fns = append(a.fns, f) }

// run does what was recorded, then forgets it. REQUIRES: no group's mutex held.
func (a *after) run() {
	for i := 0; i < len(a.fns); i++ {
		a.fns[i]()
	}
	a.fns = nil
}

// checkJoin tries the group's delayed join: a member joined or left.
func (a *after) checkJoin(g *group) {
	a.do(func() { g.c.rebalance.CheckAndComplete(RebalanceKey{group: g.id, kind: groupJoinKey}) })
}

// checkSync tries the group's delayed sync: a member synced or left.
func (a *after) checkSync(g *group) {
	a.do(func() { g.c.rebalance.CheckAndComplete(RebalanceKey{group: g.id, kind: groupSyncKey}) })
}

// checkSession tries member id's session operations: a newer one replaced
// them, or the member left.
func (a *after) checkSession(g *group, id string) {
	a.do(func() { g.c.sessions.CheckAndComplete(memberKey{g.id, id}) })
}

// submit submits an operation the coordinator owns. After Close it is not
// submitted and ends without effect: nothing waits on it but the
// coordinator.
func submit[K comparable](a *after, p *purgatory.Purgatory[K], op operation.Operation, timeout time.Duration, key K) {
	a.do(func() { _, _ = p.TryCompleteElseWatch(op, timeout, key) })
}

// PurgatorySize is what one of the coordinator's purgatories holds.
type PurgatorySize struct {
	// Pending is the number of operations waiting to be answered, each
	// once (purgatory.Pending).
	Pending int
	// Watched is the number of watch entries, until a check or purge drops
	// those of completed operations (Kafka's PurgatorySize).
	Watched int
}

// PurgatorySizes returns the size of each of the coordinator's
// purgatories, by name ("Rebalance", "Heartbeat", "OffsetExpiration"), for
// tests and tools that check that waits end and their memory is returned.
// O(shards) per purgatory.
func (c *Coordinator) PurgatorySizes() map[string]PurgatorySize {
	return map[string]PurgatorySize{
		c.rebalance.Name(): {Pending: c.rebalance.Pending(), Watched: c.rebalance.Watched()},
		c.sessions.Name():  {Pending: c.sessions.Pending(), Watched: c.sessions.Watched()},
		c.expiry.Name():    {Pending: c.expiry.Pending(), Watched: c.expiry.Watched()},
	}
}
